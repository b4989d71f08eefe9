#!/bin/sh
# End to end, as a user runs it: bad input makes `shoal` exit non-zero with exactly one line on
# stderr ("shoal: error: ..."), no stack trace or signal, and no output file (not even a partial
# or temporary one). Then a fleet with one diverging job among good ones: the bad job is recorded
# as failed with the step and layer, the others finish.
# Usage: cli_bad_input.sh SHOAL EXAMPLES_DIR WORK_DIR
set -eu
shoal=$1 examples=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
cd "$work"
fails=0

# expect_error NAME WHAT EXPECTED_STDERR_LINE COMMAND...: exit status 2, that one line, no out.*
# file. With SHOAL_ERRORS_MD=FILE, appends the case's row of docs/errors.md there.
expect_error() {
  name=$1 what=$2 want=$3
  shift 3
  status=0
  "$@" > "$name.out" 2> "$name.err" || status=$?
  lines=$(wc -l < "$name.err")
  got=$(cat "$name.err")
  if [ "$status" -ne 2 ] || [ "$lines" -ne 1 ] || [ "$got" != "$want" ]; then
    echo "FAIL $name: status $status, $lines stderr line(s):"
    cat "$name.err"
    echo "wanted: $want"
    fails=$((fails + 1))
  fi
  if [ -n "${SHOAL_ERRORS_MD:-}" ]; then
    printf '| cli_%s | %s | `%s` |\n' "$name" "$what" "$got" >> "$SHOAL_ERRORS_MD"
  fi
  if ls out.* > /dev/null 2>&1; then
    echo "FAIL $name: left an output file:"; ls out.*
    fails=$((fails + 1))
    rm -f out.*
  fi
}

printf 'unique_id,ds,y\nA,1,2\nA,2,3,4\n' > ragged.csv
expect_error forecast_ragged_csv '`shoal forecast --data ragged.csv --out out.csv`' \
  "shoal: error: ragged.csv:3: wrong number of fields (expected 3 fields, got 4)" \
  "$shoal" forecast --data ragged.csv --model naive --h 2 --out out.csv --metrics-out out.json

expect_error forecast_h_zero '`shoal forecast --model tsmixerx --h 0 ...`' \
  "shoal: error: field 'h': hyper-parameter out of range (expected an integer ≥ 1, got 0)" \
  "$shoal" forecast --data "$examples/tiny_train.csv" --model tsmixerx --h 0 --input-size 12 \
  --out out.csv

expect_error forecast_unknown_option '`shoal forecast ... --horizon=3`' \
  "shoal: error: The following argument was not expected: --horizon=3 (see shoal --help)" \
  "$shoal" forecast --data "$examples/tiny_train.csv" --model naive --h 3 --horizon=3 \
  --out out.csv

printf '0\t1\t5\t0\n7\n' > short.rating
expect_error ncf_short_line '`shoal ncf train --train short.rating`' \
  "shoal: error: short.rating:2: wrong number of fields (expected user<TAB>item[<TAB>...], got 1 field(s))" \
  "$shoal" ncf train --train short.rating --model gmf --epochs 1 --metrics-out out.json

printf 'user\n0\n' > users.csv
expect_error ncf_recommend_no_model '`shoal ncf recommend --model nope`' \
  "shoal: error: cannot load the model at nope: it is not a saved shoal model (no model.json) (expected a folder written by a shoal save)" \
  "$shoal" ncf recommend --model nope --users users.csv --out out.csv

expect_error fleet_missing_jobs_file '`shoal fleet --jobs nope.jsonl`' \
  "shoal: error: nope.jsonl: cannot open file (expected a readable file, got No such file or directory)" \
  "$shoal" fleet --jobs nope.jsonl --out out.dir

# A diverging job (learning rate 1e30) between two good ones: recorded, the others finish.
cat > jobs.jsonl <<JOBS
{"id": "good1", "data": "$examples/tiny_train.csv", "model": "tsmixerx", "max_series": 1, "config": {"h": 6, "input_size": 12, "max_steps": 20}}
{"id": "blowup", "data": "$examples/tiny_train.csv", "model": "tsmixerx", "max_series": 1, "config": {"h": 6, "input_size": 12, "max_steps": 20, "learning_rate": 1e30}}
{"id": "good2", "data": "$examples/tiny_train.csv", "model": "naive", "max_series": 1, "config": {"h": 6}}
JOBS
status=0
"$shoal" fleet --jobs jobs.jsonl --out fleet --threads 2 --quiet > fleet.log 2>&1 || status=$?
# Some jobs failed: outputs for the others, and the "partial" status 4 (docs/errors.md).
if [ "$status" -ne 4 ]; then echo "FAIL fleet: status $status"; cat fleet.log; fails=$((fails + 1)); fi
if ! grep -q "shoal: error: 1 of 3 jobs failed" fleet.log; then
  echo "FAIL fleet: no partial-failure line"; cat fleet.log; fails=$((fails + 1))
fi
if ! grep '"group":"blowup"' fleet/results.jsonl | grep -q '"error":"non-finite loss at step [0-9]* (first non-finite'; then
  echo "FAIL fleet: the diverging job is not recorded with its step and layer"; cat fleet/results.jsonl
  fails=$((fails + 1))
fi
if [ "$(grep -c '"ok":true' fleet/results.jsonl)" -ne 2 ]; then
  echo "FAIL fleet: the good jobs did not both finish"; cat fleet/results.jsonl
  fails=$((fails + 1))
fi
if ls fleet/*.tmp* > /dev/null 2>&1; then echo "FAIL fleet: temporary files left"; fails=$((fails + 1)); fi

[ "$fails" -eq 0 ] && echo "cli-bad-input-ok"
