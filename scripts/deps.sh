#!/usr/bin/env bash
# Installs the Debian packages tcptune needs, when they are missing. As root it runs apt-get;
# otherwise it prints the apt-get line to run and fails.
set -euo pipefail
packages=(build-essential cmake pkg-config g++ python3 libtomlplusplus-dev libspdlog-dev libfmt-dev
  libunwind-dev libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev
  iproute2 curl util-linux binutils gnuplot-nox scdoc
  # A musl program under the shim (tests/preload/musl_program.py builds one with musl-gcc).
  musl-tools
  # Real servers and clients for the keep_warm protocol presets (tests/presets, bench/presets); the
  # tests start their own instances in the link's namespaces, never the system services.
  nginx-light haproxy redis-server rabbitmq-server python3-redis python3-pika python3-stomp jq socat
  # Go programs for supervised mode (tests/supervised, bench/ab bursty-go), built by the tests.
  golang-go
  # A musl program for supervised mode (tests/supervised/musl_test.py, built by musl-gcc); strace
  # shows what the static tcptune opens in a chroot (chroot_test.py).
  musl-tools strace
  # The textfile read through a real node_exporter and Prometheus, and promtool for the example
  # rules (tests/preload/prometheus_processes.py, examples/prometheus); started by the tests on
  # loopback, never as services.
  prometheus prometheus-node-exporter
  # kube-inject reads manifests with libyaml (libyaml.a too, for a static tcptune); its tests check
  # the output against the Kubernetes API models and build the init image (FROM scratch, no run).
  libyaml-dev python3-kubernetes python3-yaml buildah)
# scripts/fuzz: clang 14 with libFuzzer (libclang_rt.fuzzer*.a), llvm-symbolizer for its reports.
[ "${1:-}" = fuzz ] && packages+=(clang libclang-rt-14-dev llvm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "tcptune needs: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
