#!/bin/sh
# A container entrypoint that runs the image's command under tcptune, for images nobody can
# rebuild. Copy libtcptune.so, libtcptune-core.so (beside it) and a policy into the image (or
# mount them), then:
#   ENTRYPOINT ["/opt/tcptune/container-entrypoint.sh"]
#   CMD ["/usr/bin/legacy_app", "--serve"]
# TCPTUNE_SHIM, TCPTUNE_POLICY (or TCPTUNE_POLICY_TOML) and TCPTUNE_LOG can be set with
# `docker run -e`; TCPTUNE_DISABLE=1 runs the command untouched, for the A/B "off" arm.
set -eu
shim=${TCPTUNE_SHIM:-/opt/tcptune/libtcptune.so}
if [ "${TCPTUNE_DISABLE:-0}" != 1 ]; then
  if [ -f "$shim" ]; then
    export LD_PRELOAD="$shim${LD_PRELOAD:+:$LD_PRELOAD}"
    if [ -z "${TCPTUNE_POLICY:-}${TCPTUNE_POLICY_TOML:-}" ] && [ -f /opt/tcptune/policy.toml ]; then
      export TCPTUNE_POLICY=/opt/tcptune/policy.toml
    fi
  else
    echo "tcptune: $shim not found; running untuned" >&2
  fi
fi
exec "$@"
