#!/bin/sh
# `shoal forecast` with TSMixerx, one model per series through the fleet: the 20-row series is
# too short for input_size 36 and is recorded as failed, the other three forecast 18 steps each
# and are scored; the metrics name the arena and the failure.
# Usage: cli_forecast.sh SHOAL FORECAST_EXAMPLES_DIR WORK_DIR
set -eu
shoal=$1 examples=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
"$shoal" forecast --data "$examples/tiny_train.csv" --model tsmixerx --h 18 --input-size 36 \
  --n-series 1 --threads 2 --max-steps 60 --seasonality 12 --test "$examples/tiny_test.csv" \
  --out "$work/f.csv" --allow-failures --metrics-out "$work/m.json" 2>&1
test "$(wc -l < "$work/f.csv")" -eq 55
grep -q '"arena_bytes_median": [1-9]' "$work/m.json"
grep -q '"failed": 1' "$work/m.json"
echo metrics-ok
