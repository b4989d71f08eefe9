#!/bin/sh
# `shoal tune` end to end: a global search and a search per series on the tiny sample, the best
# trial's loss is the one best.json names, forecasts for every series, a rerun resumes from the
# journal, and settings that cannot run are refused before anything is written.
# Usage: cli_tune.sh SHOAL EXAMPLES_DIR WORK_DIR
set -eu
shoal=$1 examples=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"
cp "$examples/tiny_train.csv" series.csv
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
small="--set max_steps=20 --set val_check_steps=5 --set hidden_size=16 --set num_layers=2"
"$shoal" tune --data series.csv --model mlp --h 4 --samples 3 $small --threads 2 --out g > g.log
[ "$(wc -l < g/trials.csv)" -eq 4 ] || fail "global: 3 trials wanted in g/trials.csv"
[ "$(wc -l < g/forecasts.csv)" -eq 17 ] || fail "global: 4 series x 4 steps wanted"
python3 - g <<'PY' || fail "global: best.json is not the lowest val_loss of trials.csv"
import csv, json, sys
rows = [r for r in csv.DictReader(open(f"{sys.argv[1]}/trials.csv")) if r["status"] == "ok"]
best = json.load(open(f"{sys.argv[1]}/best.json"))["best"]["all"]
low = min(rows, key=lambda r: float(r["val_loss"]))
assert abs(best["val_loss"] - float(low["val_loss"])) <= 1e-6 * abs(best["val_loss"]), (best, low)
assert best["config"] == json.loads(low["config"])
PY
"$shoal" tune --data series.csv --model mlp --h 4 --samples 3 $small --threads 2 --out g > again.log
grep -q "3 from an earlier run" again.log || fail "rerun: the journal's trials were not reused"
"$shoal" tune --data series.csv --model mlp --h 4 --samples 2 --n-series 1 $small --out p > p.log
[ "$(wc -l < p/trials.csv)" -eq 9 ] || fail "per series: 4 series x 2 trials wanted"
[ "$(cut -d, -f1 p/trials.csv | sort -u | wc -l)" -eq 5 ] || fail "per series: 4 ids wanted"
[ "$(wc -l < p/forecasts.csv)" -eq 17 ] || fail "per series: 4 series x 4 steps wanted"
# Successive halving: one worker, so the trials meet the rungs in turn; some stop early.
"$shoal" tune --data series.csv --model mlp --h 4 --samples 8 --threads 1 --prune-factor 2 \
  --set max_steps=40 --set val_check_steps=5 --set hidden_size=16 --out h > h.log
grep -q ",pruned," h/trials.csv || fail "prune: no trial was pruned"
grep -q ",40,[0-9.]*,ok," h/trials.csv || fail "prune: no trial ran its 40 steps"
for bad in "--model naive" "--model mlp --set bogus=1" "--model mlp --out series.csv"; do
  status=0
  # shellcheck disable=SC2086
  "$shoal" tune --data series.csv --h 4 --out r $bad > bad.log 2>&1 || status=$?
  [ "$status" -eq 2 ] || fail "'$bad': status $status, wanted 2: $(cat bad.log)"
done
[ ! -e r ] || fail "a refused run wrote r"
[ "$fails" -eq 0 ] && echo "cli-tune-ok"
