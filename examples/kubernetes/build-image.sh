#!/bin/sh
# Builds the init image with buildah (no container is started: FROM scratch and COPY only).
#   examples/kubernetes/build-image.sh BUILD_DIR [TAG] [BUILDAH_OPTIONS...]
# BUILD_DIR is a CMake build tree (build/release): bin/tcptune and lib/libtcptune*.so are staged
# into /tcptune, without their debug information. TAG defaults to tcptune-init:VERSION (tcptune --version).
set -eu
build=${1:?usage: build-image.sh BUILD_DIR [TAG] [BUILDAH_OPTIONS...]}
here=$(cd "$(dirname "$0")" && pwd)
tag=${2:-tcptune-init:$("$build/bin/tcptune" --version | cut -d' ' -f2)}
[ $# -ge 2 ] && shift 2 || shift $#
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/tcptune"
# Debug information stays in the build tree: the init container copies these files into every pod.
strip --strip-debug -o "$stage/tcptune/tcptune" "$build/bin/tcptune"
for lib in "$build"/lib/libtcptune*.so; do
  strip --strip-debug -o "$stage/tcptune/$(basename "$lib")" "$lib"
done
if readelf -l "$build/bin/tcptune" | grep -q 'Requesting program interpreter'; then
  echo "build-image.sh: $build/bin/tcptune is dynamically linked: it will not start in this FROM scratch image (nor in the app containers that run it for supervision); build a static tcptune" >&2
fi
chmod 0755 "$stage/tcptune" "$stage/tcptune/tcptune"
chmod 0644 "$stage"/tcptune/*.so
buildah "$@" build --quiet -f "$here/Containerfile" -t "$tag" "$stage"
