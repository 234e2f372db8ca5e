#!/bin/sh
# Runs `probe close-everything` under the shim, then checks that the log still received the
# connection lines written after the app closed everything, and contains no app data.
set -eu
log=$1
probe=$2
rm -f "$log"
"$probe" close-everything
grep -q "conn_open .*role=client" "$log" || { echo "FAIL: no conn_open after closefrom"; exit 1; }
if grep -qa "app data" "$log"; then echo "FAIL: app data in the log"; exit 1; fi
echo "ok   the log survived closefrom/close_range/dup2 and holds no app data"
