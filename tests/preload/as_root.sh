#!/bin/sh
# Runs a command that needs CAP_NET_ADMIN; exit 77 = skipped when not root.
[ "$(id -u)" = 0 ] || { echo "skipped: needs root (CAP_NET_ADMIN)"; exit 77; }
exec "$@"
