#!/bin/sh
# Usage: shim_fails_open.sh LIBTCPTUNE.SO DIR
# Every file of DIR as the policy of a program under the shim: one that opens a TCP socket (the
# core reads the policy then) must print the one-line error ("...; running untuned") and exit
# 0, and /bin/true with TCPTUNE_STRICT=1 (which reads it at start) exit 78.
shim=$1
dir=$2
tcp_program="/usr/bin/python3 -c 'import socket; socket.socket()'"
status=0
count=0
for policy in "$dir"/*; do
  [ -f "$policy" ] || continue
  count=$((count + 1))
  err=$(env -u TCPTUNE_POLICY_TOML LD_PRELOAD="$shim" TCPTUNE_POLICY="$policy" TCPTUNE_LOG_LEVEL=off sh -c "$tcp_program" 2>&1)
  code=$?
  lines=$(printf '%s\n' "$err" | wc -l)
  case "$err" in
    "tcptune: $policy:"*"; running untuned") ;;
    *) code="$code, stderr: $err" ;;
  esac
  if [ "$code" != 0 ] || [ "$lines" != 1 ]; then
    echo "FAIL $policy: exit $code ($lines lines)"
    status=1
  fi
  env -u TCPTUNE_POLICY_TOML LD_PRELOAD="$shim" TCPTUNE_POLICY="$policy" TCPTUNE_STRICT=1 /bin/true 2>/dev/null
  code=$?
  if [ "$code" != 78 ]; then
    echo "FAIL $policy: TCPTUNE_STRICT=1 exit $code, expected 78"
    status=1
  fi
done
echo "$count policies"
[ "$count" -gt 0 ] || status=1
exit $status
