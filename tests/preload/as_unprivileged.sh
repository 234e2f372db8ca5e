#!/bin/sh
# Runs a command as nobody (needs root to drop privileges); exit 77 = skipped otherwise.
# "--client default" is replaced by the namespace's default congestion control.
[ "$(id -u)" = 0 ] || { echo "skipped: needs root to drop privileges"; exit 77; }
command -v setpriv >/dev/null || { echo "skipped: setpriv missing"; exit 77; }
default=$(cat /proc/sys/net/ipv4/tcp_congestion_control)
case " $(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control) " in
  *" cubic "*) echo "skipped: cubic is allowed unprivileged on this host"; exit 77 ;;
esac
prog=$1; shift
args=$(echo "$*" | sed "s/default/$default/")
# shellcheck disable=SC2086
exec setpriv --reuid=65534 --regid=65534 --clear-groups "$prog" $args
