#!/usr/bin/env bash
# Cross builds shoal for 64-bit Arm (aarch64: NEON kernels through Highway, OpenBLAS for the
# GEMMs libxsmm would take on x86) and runs the test suite under qemu-aarch64.
#   tools/test_aarch64.sh                 configure (preset aarch64, build/aarch64), build, ctest
#   tools/test_aarch64.sh --install       first install the cross compiler, qemu and the arm64
#                                         -dev packages (Debian 12, needs root)
#   tools/test_aarch64.sh -- ARGS...      ARGS go to ctest, e.g. -- -R '^(Lanes|NcfTower)'
# JOBS (default 2) sets the build's and ctest's parallelism.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=${JOBS:-2}

packages=(g++-aarch64-linux-gnu qemu-user libhwy-dev:arm64 libfmt-dev:arm64 zlib1g-dev:arm64
          libopenblas-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64)
if [ "${1:-}" = "--install" ]; then
  shift
  dpkg --add-architecture arm64
  apt-get update
  apt-get install -y "${packages[@]}"
fi
[ "${1:-}" = "--" ] && shift

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "tools/test_aarch64.sh: missing ${missing[*]} (run it with --install)" >&2
  exit 1
fi

start=$(date +%s)
cmake --preset aarch64
cmake --build build/aarch64 -j"$jobs"
built=$(date +%s)
echo "aarch64 build: $((built - start)) s"
status=0
ctest --test-dir build/aarch64 -j"$jobs" --output-on-failure "$@" || status=$?
echo "aarch64 tests under qemu-aarch64: $(($(date +%s) - built)) s"
exit "$status"
