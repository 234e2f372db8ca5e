#!/bin/sh
# Secure-execution mode (setuid, AT_SECURE): the shim must ignore TCPTUNE_* variables, so an
# unprivileged user cannot point a setuid program at a policy or a log path of their choosing.
# glibc preloads into a setuid program only libraries from the standard directories that carry
# the setuid bit, so a copy of the shim is installed there for the test and removed after.
# Usage: secure_execution.sh SHIM PROBE        (root only; exit 77 otherwise)
set -eu
[ "$(id -u)" = 0 ] || { echo "skipped: needs root (setuid copies, the system library directory)"; exit 77; }
command -v setpriv >/dev/null || { echo "skipped: setpriv missing"; exit 77; }
shim=$1 probe=$2
libdir=$(dirname "$(ldd /bin/sh | sed -n 's/.*libc.so.6 => \([^ ]*\).*/\1/p')")
work=$(mktemp -d /tmp/tcptune-secure.XXXXXX)
installed="$libdir/libtcptune-secure-test-$$.so"
# The first stage loads the core from beside itself, named after it.
installed_core="$libdir/libtcptune-secure-test-$$-core.so"
trap 'rm -rf "$work" "$installed" "$installed_core"' EXIT
case ",$(findmnt -no OPTIONS --target "$work")," in
  *,nosuid,*) echo "skipped: $work is mounted nosuid"; exit 77 ;;
esac
install -m 4755 "$shim" "$installed"
install -m 0755 "$(dirname "$shim")/libtcptune-core.so" "$installed_core"
install -m 4755 -o root "$probe" "$work/probe-setuid"
install -m 0755 "$probe" "$work/probe-plain"
chmod 0777 "$work"
policy='version = 1
[defaults]
nodelay = "on"'
run_as_nobody() {
  setpriv --reuid=65534 --regid=65534 --clear-groups env LD_PRELOAD="$1" TCPTUNE_POLICY_TOML="$policy" \
    TCPTUNE_LOG="$work/$2.log" TCPTUNE_LOG_LEVEL=debug "$work/$2" nodelay --client "$3" --server "$3"
}
# Control: an ordinary program honours the variables (the policy turns nodelay on, the log appears).
run_as_nobody "$installed" probe-plain 1
[ -s "$work/probe-plain.log" ] || { echo "FAIL: the control wrote no log"; exit 1; }
# The setuid program: the shim is loaded (ld.so says nothing of an object it could not preload),
# but the policy and the log path from the environment are ignored: the built-in default
# (nodelay = "on-wait") leaves Nagle on.
run_as_nobody "libtcptune-secure-test-$$.so" probe-setuid 0 2>"$work/setuid.stderr"
if grep -q "cannot be preloaded" "$work/setuid.stderr"; then
  echo "FAIL: the shim was not preloaded into the setuid program: $(cat "$work/setuid.stderr")"
  exit 1
fi
if [ -e "$work/probe-setuid.log" ]; then
  echo "FAIL: TCPTUNE_LOG was honoured in secure-execution mode"
  exit 1
fi
echo "ok: secure-execution mode ignores TCPTUNE_POLICY_TOML and TCPTUNE_LOG"
