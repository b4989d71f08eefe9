#!/bin/sh
# The profiler's optimisation loop (docs/profiler.md, "Walkthrough: the loop"), end to end with
# small settings (seconds on two cores): profile a TSMixerx fit and an NCF epoch, change one
# setting each (the batch size; the threads, as the advice says), diff the runs, read the advice. Its output is the walkthrough's.
#
# Usage: tools/profiler_walkthrough.sh [SHOAL_BINARY] [OUT_DIR]
#   defaults: build/release/shoal, /tmp/shoal-walkthrough (removed first)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
shoal=${1:-$root/build/release/shoal}
out=${2:-/tmp/shoal-walkthrough}
data=$root/../shared/data/ts/etth1.csv.gz
rm -rf "$out"
mkdir -p "$out"
run() {
  printf '\n$ %s\n' "$*" | sed "s|$shoal|shoal|; s|$out/|out/|g; s|$root/||g"
  "$@" 2>&1 | sed "s|$out/|out/|g"
}

echo "== 1. TSMixerx on ETTh1 (7 series, 60 steps): batch 32, then batch 8"
for b in 32 8; do
  run "$shoal" forecast --data "$data" --model tsmixerx --h 24 --input-size 96 --n-series all \
    --max-steps 60 --batch-size $b --out "$out/tsmixerx_b$b.csv" \
    --profile stats --profile-rows 8 --profile-out "$out/tsmixerx_b$b"
done
run "$shoal" profile diff "$out/tsmixerx_b32" "$out/tsmixerx_b8" --rows 12 \
  --html "$out/tsmixerx.diff.html"

echo
echo "== 2. NCF (NeuMF), one epoch of 20k positives: 2 threads, then 1 (as the advice says)"
run "$shoal" synth ncf --positives 20000 --users 400 --items 300 --context 2 --out "$out/ncf.csv"
for t in 2 1; do
  run "$shoal" ncf train --train "$out/ncf.csv" --epochs 1 --threads $t --batch-positives 256 \
    --profile trace --profile-gzip --profile-rows 8 --profile-out "$out/ncf_t$t"
done
run "$shoal" profile diff "$out/ncf_t2" "$out/ncf_t1" --rows 12
echo
ls -l "$out"/ncf_t1/ | awk 'NR > 1 {print $5, $9}'
