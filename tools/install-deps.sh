#!/usr/bin/env bash
# Installs what shoal needs on Debian 12, from Debian (apt-get) and PyPI (pip). Idempotent: does
# nothing when all are present.
#   tools/install-deps.sh           what ./dev.sh test needs: the build's packages, the format
#                                   and lint tools, and the Python venv build/pyenv for the
#                                   extension and its tests
#   tools/install-deps.sh --build   only what building the library and the CLI needs (./dev.sh
#                                   demo): Debian packages, no Python venv
#   tools/install-deps.sh --fuzz    the build's packages plus clang and its fuzzer/sanitizer
#                                   runtimes (tools/fuzz.sh); no Python venv
set -euo pipefail

mode=${1:-test}
mode=${mode#--}
case "$mode" in
  test | build | fuzz) ;;
  *) echo "usage: tools/install-deps.sh [--build|--fuzz]" >&2; exit 2 ;;
esac

# The build: compilers, CMake/Ninja, ccache (./dev.sh compiles through it when present) and the
# libraries shoal links (Highway, libhwy-dev: the SIMD layer of the kernels). GoogleTest and
# Google Benchmark are found when the build is configured.
packages=(
  build-essential cmake ninja-build pkg-config git ccache python3
  libxsmm-dev libopenblas-dev librandom123-dev libcli11-dev nlohmann-json3-dev libfmt-dev zlib1g-dev
  libhwy-dev libgtest-dev libgmock-dev libbenchmark-dev
)
case "$mode" in
  # qemu-user: tests/cli_any_x86.sh runs the CLI on an emulated CPU without AVX.
  test) packages+=(python3-h5py python3-venv python3-dev clang-format clang-tidy qemu-user) ;;
  # libFuzzer ships with clang's runtime libraries (Debian: libclang-rt-14-dev); gcc has none.
  fuzz) packages+=(clang libclang-rt-14-dev) ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "shoal: installing Debian packages: ${missing[*]}" >&2
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Only the tests need Python packages.
if [ "$mode" != test ]; then exit 0; fi

# Python: a virtual environment in the build tree (Debian's pip refuses system installs, PEP 668)
# with what the extension's build and the Python tests need, from PyPI. Debian's python3 is the
# interpreter; the stamp file names the requirements, so an unchanged list installs nothing.
python_requirements=(nanobind scikit-build-core numpy pandas pyarrow dask distributed pytest
                     safetensors polars matplotlib optuna)
venv="$(cd "$(dirname "$0")/.." && pwd)/build/pyenv"
stamp="$venv/.shoal-requirements"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "${python_requirements[*]}" ]; then
  echo "shoal: creating $venv (${python_requirements[*]})" >&2
  interpreter=/usr/bin/python3
  [ -x "$interpreter" ] || interpreter=python3
  "$interpreter" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${python_requirements[@]}"
  echo "${python_requirements[*]}" > "$stamp"
fi
