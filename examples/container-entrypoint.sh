#!/bin/sh
# A container entrypoint that runs the image's command under tcptune, for images nobody can
# rebuild. Copy the static tcptune, libtcptune.so, libtcptune-core.so (beside it) and a policy
# into the image (or mount them), then:
#   ENTRYPOINT ["/opt/tcptune/container-entrypoint.sh"]
#   CMD ["/usr/bin/legacy_app", "--serve"]
# With tcptune there, it picks the mode per program and says why: the shim preloaded into a
# glibc program, supervision for the rest (static, Go, musl as in Alpine), or for every program
# when only tcptune was copied. With the shim alone, it is preloaded, which tunes glibc programs
# only. An image without /bin/sh (distroless) uses tcptune itself:
#   ENTRYPOINT ["/opt/tcptune/tcptune", "run", "--no-log", "--"]
# TCPTUNE_BIN, TCPTUNE_SHIM, TCPTUNE_POLICY (or TCPTUNE_POLICY_TOML) and TCPTUNE_LOG can be set
# with `docker run -e`; TCPTUNE_DISABLE=1 runs the command untouched, for the A/B "off" arm.
# Run from the installed package (/usr/share/tcptune/container-entrypoint.sh), it uses the
# installed tcptune and shim instead: PREFIX/bin/tcptune and PREFIX/lib/*/tcptune/libtcptune.so.
set -eu
dir=/opt/tcptune
shim_default=$dir/libtcptune.so
self=$(readlink -f "$0" 2>/dev/null) || self=$0
case $self in
  */share/tcptune/container-entrypoint.sh)
    prefix=${self%/share/tcptune/container-entrypoint.sh}
    dir=$prefix/bin
    for shim_default in "$prefix"/lib/*/tcptune/libtcptune.so "$prefix"/lib/tcptune/libtcptune.so; do
      [ -f "$shim_default" ] && break
    done
    ;;
esac
shim=${TCPTUNE_SHIM:-$shim_default}
tcptune=${TCPTUNE_BIN:-$dir/tcptune}
if [ "${TCPTUNE_DISABLE:-0}" != 1 ]; then
  if [ -z "${TCPTUNE_POLICY:-}${TCPTUNE_POLICY_TOML:-}" ] && [ -f /opt/tcptune/policy.toml ]; then
    export TCPTUNE_POLICY=/opt/tcptune/policy.toml
  fi
  if [ -x "$tcptune" ]; then
    # No summary table at exit; a log only where TCPTUNE_LOG asks for one (as with the shim alone).
    quiet=--no-log
    [ -n "${TCPTUNE_LOG:-}" ] && quiet=--quiet
    if [ -f "$shim" ]; then
      export TCPTUNE_SHIM="$shim"
      exec "$tcptune" run "$quiet" -- "$@"
    fi
    exec "$tcptune" run "$quiet" --supervise -- "$@"
  elif [ -f "$shim" ]; then
    export LD_PRELOAD="$shim${LD_PRELOAD:+:$LD_PRELOAD}"
  else
    echo "tcptune: neither $tcptune nor $shim found; running untuned" >&2
  fi
fi
exec "$@"
