#!/usr/bin/env bash
# Runs the release test suite (ctest, then pytest tests/python) once per kernel path:
#   generic  OpenBLAS's generic SSE3 kernels (OPENBLAS_CORETYPE=Prescott) and libxsmm without
#            its JIT (LIBXSMM_TARGET=generic), what a CPU the libraries do not know gets
#   widest   the widest kernels this CPU runs, chosen from its features: AVX-512 (SkylakeX, skx)
#            or AVX2 (Haswell, hsw)
#   sse4     SHOAL_ISA=sse4: shoal's kernels, libxsmm and OpenBLAS all on the x86-64-v2 path
#   avx2     SHOAL_ISA=avx2: the AVX2 path of all three (on a CPU that has it)
# No test may depend on the path a CPU gets (docs/kernels.md), so all must pass. Needs the
# release build with the Python extension (./dev.sh test builds it).
#   tools/test_kernel_paths.sh [generic|widest|sse4|avx2]...   (default: all four)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/release/shoal ] && [ -x build/pyenv/bin/python ] ||
  { echo "shoal: build the release preset with the Python extension first (./dev.sh test)" >&2; exit 2; }

flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() { [[ " $flags " == *" $1 "* ]]; }
widest_blas=Haswell widest_xsmm=hsw
if has avx512f && has avx512bw && has avx512vl && has avx512dq; then
  widest_blas=SkylakeX widest_xsmm=skx
fi

paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(generic widest sse4 avx2)
failed=0
for path in "${paths[@]}"; do
  case "$path" in
    generic) env=(OPENBLAS_CORETYPE=Prescott LIBXSMM_TARGET=generic) ;;
    widest) env=(OPENBLAS_CORETYPE=$widest_blas LIBXSMM_TARGET=$widest_xsmm) ;;
    sse4) env=(SHOAL_ISA=sse4) ;;
    avx2)
      if ! has avx2; then echo "== avx2: skipped: this CPU has no AVX2"; continue; fi
      env=(SHOAL_ISA=avx2) ;;
    *) echo "usage: tools/test_kernel_paths.sh [generic|widest|sse4|avx2]..." >&2; exit 2 ;;
  esac
  echo "== $path: ${env[*]}"
  log=$(mktemp)
  env "${env[@]}" ctest --test-dir build/release -j "$(nproc)" --output-on-failure >"$log" 2>&1 ||
    failed=1
  grep -E "tests passed|\*\*\*Failed|Failed  " "$log" || true
  env "${env[@]}" PYTHONPATH="$PWD/build/release/python" build/pyenv/bin/python -m pytest -q \
    -p no:cacheprovider tests/python >"$log" 2>&1 || failed=1
  grep -E "^FAILED|[0-9]+ (passed|failed)" "$log" || true
  rm -f "$log"
done
exit $failed
