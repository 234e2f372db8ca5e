#!/bin/sh
# The quick-start demo as a test: with the shim, the median request is at least 10x faster
# (Nagle + delayed ACK cost ~40 ms; with TCP_NODELAY it is well under 1 ms on loopback).
set -eu
tcptune=$1
demo=$2
off=$(env -u LD_PRELOAD "$demo" --requests 20 | sed -n 's/.*p50_us=\([0-9.]*\).*/\1/p')
on=$(env -u TCPTUNE_POLICY -u TCPTUNE_POLICY_TOML "$tcptune" run -- "$demo" --requests 20 | sed -n 's/.*p50_us=\([0-9.]*\).*/\1/p')
echo "p50 without the shim: ${off} us, with: ${on} us"
# An empty value (a run that printed nothing) must fail, not compare as 0.
[ -n "$off" ] && [ -n "$on" ] || { echo "FAIL: a run printed no p50"; exit 1; }
awk -v a="$off" -v b="$on" 'BEGIN { exit !(b > 0 && a >= 10 * b) }'
