#!/usr/bin/env bash
# Installs the Debian packages tcptune needs, when they are missing. As root it runs apt-get;
# otherwise it prints the apt-get line to run and fails.
#   scripts/deps.sh          what building needs (compilers, CMake, the libraries' -dev packages)
#   scripts/deps.sh package  and what scripts/package needs (dpkg-dev, lintian)
#   scripts/deps.sh demo     and what scripts/demo runs (ip, tc)
#   scripts/deps.sh test     and the programs the tests run: real servers, Go, musl, strace...
#   scripts/deps.sh fuzz     and clang with libFuzzer (scripts/fuzz)
# The servers the tests use (nginx, haproxy, Redis, RabbitMQ, Prometheus, node_exporter) are
# started by the tests themselves, on loopback or in their own namespaces. Installed here, they
# are kept from starting as services: a policy-rc.d that denies every start is in place during
# the install (unless the system already has one), and the services and sockets that the install
# enabled are disabled (and stopped) afterwards.
set -euo pipefail
mode=${1:-build}
build=(build-essential cmake pkg-config g++ binutils libtomlplusplus-dev libspdlog-dev libfmt-dev
  nlohmann-json3-dev libcli11-dev
  # kube-inject reads manifests with libyaml (libyaml.a, for the static tcptune).
  libyaml-dev
  # The man pages are generated from docs/man/*.scd at build time.
  scdoc
  # The tests are built with the product by default (TCPTUNE_BUILD_TESTS, TCPTUNE_BUILD_BENCH):
  # GoogleTest, Google Benchmark, and Python to run them.
  libgtest-dev libgmock-dev libbenchmark-dev python3)
package=(dpkg-dev lintian)
demo=(iproute2)
test=("${package[@]}" "${demo[@]}" curl util-linux jq socat strace
  # libtcptune-core.so loads it for `callsite = true` backtraces (tests/preload/callsites.py).
  libunwind8
  # A musl program under the shim and under supervision (tests/preload/musl_program.py,
  # tests/supervised/musl_test.py build one with musl-gcc).
  musl-tools
  # Real servers and clients for the keep_warm protocol presets (tests/presets, bench/presets).
  nginx-light haproxy redis-server rabbitmq-server python3-redis python3-pika python3-stomp
  # Go programs for supervised mode (tests/supervised, bench/ab bursty-go), built by the tests.
  golang-go
  # The textfile read through a real node_exporter and Prometheus, and promtool for the example
  # rules (tests/preload/prometheus_processes.py, examples/prometheus).
  prometheus prometheus-node-exporter
  # kube-inject's output checked against the Kubernetes API models; the init image built (FROM
  # scratch, no container started).
  python3-kubernetes python3-yaml buildah
  # The manual rendered by man --warnings, the zsh completion run in a zsh, the drop-ins checked
  # by systemd-analyze verify (tests/docs, tests/cli): without them those tests skip.
  man-db zsh systemd)
fuzz=(clang libclang-rt-14-dev llvm)
packages=("${build[@]}")
case $mode in
  build) ;;
  package) packages+=("${package[@]}") ;;
  demo) packages+=("${demo[@]}") ;;
  test) packages+=("${test[@]}") ;;
  # scripts/fuzz: clang 14 with libFuzzer (libclang_rt.fuzzer*.a), llvm-symbolizer for its reports.
  fuzz) packages+=("${fuzz[@]}") ;;
  *) echo "usage: scripts/deps.sh [build|package|demo|test|fuzz]" >&2; exit 2 ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "tcptune needs: sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
policy_rc=/usr/sbin/policy-rc.d
if [ ! -e "$policy_rc" ]; then
  # invoke-rc.d and deb-systemd-invoke ask it before starting a service: 101 is "not allowed".
  printf '#!/bin/sh\nexit 101\n' >"$policy_rc"
  chmod 755 "$policy_rc"
  trap 'rm -f "$policy_rc"' EXIT
fi
# The services and sockets enabled now, to tell the ones this install enables.
enabled_units() {
  command -v systemctl >/dev/null || return 0
  systemctl list-unit-files --state=enabled --type=service,socket --no-legend 2>/dev/null | awk '{print $1}' | sort
}
enabled_before=$(enabled_units)
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Off, so that the next boot does not start them either (--now fails where systemd is not running).
for unit in $(comm -13 <(echo "$enabled_before") <(enabled_units)); do
  echo "disabling $unit (the tests start their own instances)"
  systemctl disable --now "$unit" >/dev/null 2>&1 || systemctl disable "$unit" >/dev/null 2>&1 || true
done
