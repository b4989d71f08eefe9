#!/usr/bin/env bash
# Installs what shoal needs to build and test on Debian 12: compilers, CMake/Ninja and the
# libraries it links (all Debian packages), and the Python venv build/pyenv for the extension and
# its tests. Idempotent: does nothing when all are present.
#   tools/install-deps.sh           what ./dev.sh builds and tests need
#   tools/install-deps.sh --fuzz    the Debian packages plus clang and its fuzzer/sanitizer
#                                   runtimes (tools/fuzz.sh); no Python venv
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libxsmm-dev libopenblas-dev librandom123-dev libcli11-dev nlohmann-json3-dev libfmt-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-h5py python3-venv python3-dev
  clang-format clang-tidy
)
# libFuzzer ships with clang's runtime libraries (Debian: libclang-rt-14-dev); gcc has none.
if [ "${1:-}" = "--fuzz" ]; then
  packages+=(clang libclang-rt-14-dev)
fi

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

# Fuzzing needs no Python.
if [ "${1:-}" = "--fuzz" ]; then exit 0; fi

# Python: a virtual environment in the build tree (Debian's pip refuses system installs, PEP 668)
# with what the extension's build and the Python tests need, from PyPI. Debian's python3 is the
# interpreter; the stamp file names the requirements, so an unchanged list installs nothing.
python_requirements=(nanobind scikit-build-core numpy pandas pyarrow dask distributed pytest
                     safetensors polars matplotlib)
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
