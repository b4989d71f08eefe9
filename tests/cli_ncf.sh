#!/bin/sh
# `shoal ncf` end to end, one case per call (ctest checks the output against each case's
# pattern in tests/CMakeLists.txt):
#   cli_ncf.sh profile fused|layer-by-layer SHOAL WORK_DIR
#       `ncf train` on a synthetic CSV, profiled: one fused zone per chunk by default, every
#       layer's zones with --layer-by-layer
#   cli_ncf.sh full-ranking SHOAL ML100K_PREFIX
#       full-ranking metrics every epoch beside the sampled ones, on ml-100k
#   cli_ncf.sh split SHOAL ML100K_DIR WORK_DIR
#       `ncf split` of MovieLens' u.data (1-based ids) gives the shared ml-100k test file's
#       held-out interaction (0-based) for every user
#   cli_ncf.sh pretrained SHOAL DATA_DIR PYTHON WORK_DIR
#       the NCF authors' pretrained ml-1m weights (HDF5) scored by `shoal ncf eval` reproduce the
#       published HR@10 / NDCG@10 (tools/ncf_pretrained.py; PYTHON must have h5py)
# A data set that is not there prints "skipped: no ..." (ctest reports the case as skipped).
set -eu
case=$1
shift
case $case in
  profile)
    mode=$1 shoal=$2 work=$3
    mkdir -p "$work"
    "$shoal" synth ncf --positives 3000 --users 40 --items 64 --context 3 --out "$work/$mode.csv"
    "$shoal" ncf train --train "$work/$mode.csv" --epochs 1 --threads 2 --batch-positives 32 \
      "--$mode" --profile stats --profile-out "$work/$mode" 2>&1
    ;;
  full-ranking)
    shoal=$1 data=$2
    [ -f "$data.train.rating" ] || { echo "skipped: no $data.train.rating"; exit 0; }
    "$shoal" ncf train --train "$data.train.rating" --test "$data.test.rating" \
      --test-negatives "$data.test.negative" --num-items 1682 --epochs 2 --threads 2 \
      --full-ranking 2>&1
    ;;
  split)
    shoal=$1 dir=$2 work=$3
    [ -f "$dir/u.data" ] || { echo "skipped: no $dir/u.data"; exit 0; }
    mkdir -p "$work"
    "$shoal" ncf split --data "$dir/u.data" --how leave-last-out --train-out "$work/train" \
      --test-out "$work/test"
    awk -F'\t' '{ printf "%d\t%d\t%d\t%d\n", $1 - 1, $2 - 1, $3, $4 }' "$work/test" |
      sort > "$work/test0"
    sort "$dir/ml-100k.test.rating" > "$work/want"
    cmp "$work/test0" "$work/want"
    echo "same $(wc -l < "$work/test0") test rows"
    ;;
  pretrained)
    shoal=$1 data=$2 python=$3 work=$4
    [ -d "$data/ncf" ] || { echo "skipped: no $data/ncf"; exit 0; }
    "$python" "$(dirname "$0")/../tools/ncf_pretrained.py" check --shoal "$shoal" --data "$data" \
      --tmp "$work"
    ;;
  *) echo "usage: cli_ncf.sh profile|full-ranking|split|pretrained ..." >&2; exit 2 ;;
esac
