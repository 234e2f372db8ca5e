#!/bin/sh
# Builds the init image with buildah (no container is started: FROM scratch and COPY only).
#   examples/kubernetes/build-image.sh BUILD_DIR [TAG] [BUILDAH_OPTIONS...]
# BUILD_DIR is a CMake build tree (build/release): bin/tcptune and lib/libtcptune*.so are staged
# into /tcptune. TAG defaults to tcptune-init:VERSION (tcptune --version).
set -eu
build=${1:?usage: build-image.sh BUILD_DIR [TAG] [BUILDAH_OPTIONS...]}
here=$(cd "$(dirname "$0")" && pwd)
tag=${2:-tcptune-init:$("$build/bin/tcptune" --version | cut -d' ' -f2)}
[ $# -ge 2 ] && shift 2 || shift $#
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/tcptune"
cp "$build/bin/tcptune" "$stage/tcptune/"
for lib in "$build"/lib/libtcptune*.so; do
  cp "$lib" "$stage/tcptune/"
done
chmod 0755 "$stage/tcptune" "$stage/tcptune/tcptune"
chmod 0644 "$stage"/tcptune/*.so
buildah "$@" build --quiet -f "$here/Containerfile" -t "$tag" "$stage"
