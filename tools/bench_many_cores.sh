#!/bin/sh
# The figures that need a machine with many cores, in one command (a few minutes on 16 cores):
#   tools/bench_many_cores.sh [SHOAL] [OUT_DIR]
# 1. Fleet scaling: `shoal fleet` fits one TSMixerx per series of the shipped M3 monthly sample
#    (h 18, input 36, 200 steps), 8 series per worker, at 1, 2, 4, 8 and 16 workers (those this
#    process may use), and prints fits/s, the speed-up over 1 worker and the efficiency.
# 2. ISA paths: `shoal bench peak`, `bench kernels` and `bench tsmixerx --steps-only` on each
#    SIMD path the CPU has (SHOAL_ISA=sse4, avx2, avx512), so the widest path's gain over AVX2 is
#    measured by the same binary in the same run. TSMIXERX_DATA names the M4 hourly training file
#    when ../shared/data is not beside the checkout.
# 3. NCF thread scaling: `shoal bench ncf` (one epoch of the contextual recommender's shape) at
#    1, 2, 4, 8 and 16 threads, against PyTorch at 1, 2 and every thread when PEER_PYTHON (default
#    python3) imports torch.
# Everything it prints is also kept under OUT_DIR (default: bench-many-cores), with the CPU's
# model name, so a figure always says where it comes from.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
shoal=${1:-$here/build/release/shoal}
out=${2:-bench-many-cores}
[ -x "$shoal" ] || { echo "usage: tools/bench_many_cores.sh [SHOAL] [OUT_DIR] (no $shoal)" >&2; exit 2; }
mkdir -p "$out"
log="$out/summary.txt"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
cpus=$(nproc)
{
  echo "machine: $cpu, $cpus CPUs this process may use"
  "$shoal" --version
} | tee "$log"

# 1. Fleet scaling.
data="$here/examples/forecast/m3_monthly_200_train.csv.gz"
tsmixerx_data=${TSMIXERX_DATA:-$here/../shared/data/ts/m4_hourly_train.csv.gz}
echo "fleet: TSMixerx per series, M3 monthly sample, 200 steps, 8 series per worker" | tee -a "$log"
printf '%8s %8s %10s %9s %11s\n' workers fits fits/s speed-up efficiency | tee -a "$log"
base=""
for w in 1 2 4 8 16; do
  [ "$w" -le "$cpus" ] || break
  n=$((8 * w))
  [ "$n" -le 200 ] || n=200
  jobs="$out/fleet_$w.jsonl"
  printf '{"id": "w%s", "data": "%s", "model": "tsmixerx", "max_series": %s, "config": {"h": 18, "input_size": 36, "seasonality": 12, "max_steps": 200}}\n' \
    "$w" "$data" "$n" > "$jobs"
  "$shoal" fleet --jobs "$jobs" --out "$out/fleet_$w" --no-resume --threads "$w" --quiet \
    --metrics-out "$out/fleet_$w.json" > "$out/fleet_$w.log" 2>&1 ||
    { cat "$out/fleet_$w.log" >&2; exit 1; }
  rate=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['fits_per_s'])" \
    "$out/fleet_$w.json")
  [ -n "$base" ] || base=$rate
  python3 -c "import sys; w,n,r,b=int(sys.argv[1]),int(sys.argv[2]),float(sys.argv[3]),float(sys.argv[4]); print(f'{w:8d} {n:8d} {r:10.2f} {r/b:8.2f}x {r/b/w:10.0%}')" \
    "$w" "$n" "$rate" "$base" | tee -a "$log"
done

# 2. ISA paths, narrowest first; a path the CPU lacks is refused by shoal and skipped here.
for isa in sse4 avx2 avx512; do
  if ! SHOAL_ISA=$isa "$shoal" --version > /dev/null 2>&1; then
    echo "isa $isa: skipped (not on this CPU)" | tee -a "$log"
    continue
  fi
  echo "isa $isa:" | tee -a "$log"
  SHOAL_ISA=$isa "$shoal" bench peak 2>&1 | tee -a "$log"
  SHOAL_ISA=$isa "$shoal" bench kernels --json "$out/kernels_$isa.json" 2>&1 | tee -a "$log"
  SHOAL_ISA=$isa "$shoal" bench tsmixerx --steps-only --data "$tsmixerx_data" \
    --json "$out/tsmixerx_$isa.json" 2>&1 |
    tee -a "$log"
done
# 3. NCF thread scaling, with the PyTorch peer where one is at hand.
threads=""
for t in 1 2 4 8 16; do [ "$t" -le "$cpus" ] && threads="$threads${threads:+,}$t"; done
peer_python=${PEER_PYTHON:-python3}
if "$peer_python" -c "import torch" > /dev/null 2>&1; then
  peer_threads=1
  [ "$cpus" -ge 2 ] && peer_threads="1,2"
  [ "$cpus" -gt 2 ] && peer_threads="$peer_threads,$cpus"
  set -- --peer-python "$peer_python" --peer-script "$here/bench/peers/ncf_torch.py" \
    --peer-threads-list "$peer_threads"
else
  echo "ncf: no PyTorch peer ($peer_python does not import torch)" | tee -a "$log"
  set --
fi
"$shoal" bench ncf --threads-list "$threads" --json "$out/ncf.json" "$@" 2>&1 | tee -a "$log"
echo "bench-many-cores: figures in $log"
