#!/bin/sh
# One build runs on any x86-64: `shoal forecast` (TSMixerx, trained and forecast) under
# qemu-x86_64 -cpu Nehalem, a CPU with SSE4.2 and no AVX, where shoal takes its SSE4 kernels,
# OpenBLAS its own detection and libxsmm no JIT. It must run without SIGILL and give this
# machine's native numbers within 1e-3 relative (+ 1e-3 absolute): the paths round differently
# (no FMA on SSE4, other summation orders in the GEMM libraries), a few ulps per op compounded
# over 30 Adam steps. Skipped on another architecture, and when qemu-x86_64 is not installed
# (Debian: qemu-user).
#   tests/cli_any_x86.sh SHOAL SOURCE_DIR WORK_DIR
set -eu
shoal=$1 src=$2 work=$3
case $(uname -m) in
  x86_64) ;;
  *)
    echo "skipped: an x86-64 test, this is $(uname -m)"
    exit 0
    ;;
esac
if ! command -v qemu-x86_64 >/dev/null 2>&1; then
  echo "skipped: no qemu-x86_64 (apt-get install qemu-user)"
  exit 0
fi
rm -rf "$work"
mkdir -p "$work"
fit() {
  "$@" forecast --data "$src/examples/forecast/tiny_train.csv" --model tsmixerx --h 6 \
    --input-size 12 --n-series 1 --threads 1 --max-steps 30 --out "$out"
}
out="$work/native.csv" fit "$shoal" > "$work/native.log" 2>&1
emu="qemu-x86_64 -cpu Nehalem"
$emu "$shoal" --version | tee "$work/version.txt"
grep -q "isa: sse4" "$work/version.txt"
out="$work/nehalem.csv" fit $emu "$shoal" > "$work/nehalem.log" 2>&1
# Same rows and ids; every number within the tolerance.
awk -F, 'NR == FNR { row[FNR] = $0; next }
  {
    n = split(row[FNR], a, ","); if (n != NF) { print "columns differ at line " FNR; bad = 1; exit }
    for (i = 1; i <= NF; ++i) {
      if ($i == a[i]) continue
      if ($i !~ /^-?[0-9.eE+-]+$/) { print "field " i " differs at line " FNR ": " $i " vs " a[i]; bad = 1; exit }
      d = $i - a[i]; if (d < 0) d = -d
      m = a[i] < 0 ? -a[i] : a[i]
      if (d > 1e-3 * m + 1e-3) { print "line " FNR " field " i ": " $i " vs " a[i]; bad = 1; exit }
      if (d / (m + 1e-30) > worst) worst = d / (m + 1e-30)
    }
    rows = FNR
  }
  END { if (bad) exit 1; if (rows != length(row) || rows < 2) { print "row counts differ"; exit 1 }
        printf "%d rows, largest relative difference %.2g\n", rows, worst }' \
  "$work/native.csv" "$work/nehalem.csv"
echo any-x86-ok
