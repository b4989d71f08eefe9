#!/bin/sh
# End to end, as a hostile but realistic user runs it: never a silent wrong answer. Stale
# journals are not reused by other settings or data; the exit status tells the truth (stopped:
# 128 + signal, every series failed or a setup error: 2, some failed: 4); inputs are checked
# before training; outputs that are inputs, folders, devices or in missing folders are refused
# before any work; one run per output (an advisory lock); bad numbers are refused in every
# command. Each case checks the status, stderr and what is (not) left on disk.
# With SHOAL_ERRORS_MD=FILE each one-line error appends its docs/errors.md row; with
# SHOAL_RELIABILITY_MD=FILE every case appends its docs/reliability.md row.
# Usage: cli_reliability.sh SHOAL EXAMPLES_DIR WORK_DIR
set -eu
shoal=$1 examples=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
cd "$work"
fails=0
cp "$examples/tiny_train.csv" "$examples/tiny_test.csv" .
train=tiny_train.csv
fit="--model tsmixerx --h 6 --input-size 24 --seasonality 12"
# The runs below that are only there to be stopped train long enough to be caught mid-run. The
# sanitizer builds run 20-30x slower, so their test preset divides those steps by
# SHOAL_TEST_STEP_SCALE: the same code paths, a shorter wait.
scale=${SHOAL_TEST_STEP_SCALE:-1}
stop_steps=$((4000 / scale)) key_steps=$((3000 / scale))

fail() {
  echo "FAIL $*"
  fails=$((fails + 1))
}

# expect NAME WHAT STATUS COMMAND...: the exit status, then a row for docs/reliability.md with
# stderr's last line (the verdict). Leaves NAME.err and NAME.log (stdout) for further checks.
expect() {
  name=$1 what=$2 want=$3
  shift 3
  status=0
  "$@" > "$name.log" 2> "$name.err" || status=$?
  if [ "$status" -ne "$want" ]; then
    fail "$name: status $status, wanted $want"
    cat "$name.err"
  fi
  if [ -n "${SHOAL_RELIABILITY_MD:-}" ]; then
    last=$(tail -n 1 "$name.err" | sed 's/|/\\|/g')
    printf '| %s | %s | %s | `%s` |\n' "$name" "$what" "$status" "$last" >> "$SHOAL_RELIABILITY_MD"
  fi
}

# expect_error NAME WHAT LINE COMMAND...: status 2, exactly LINE on stderr, no out.* file left.
expect_error() {
  name=$1 what=$2 line=$3
  shift 3
  expect "$name" "$what" 2 "$@"
  if [ "$(wc -l < "$name.err")" -ne 1 ] || [ "$(cat "$name.err")" != "$line" ]; then
    fail "$name: stderr is not the one line wanted:"
    cat "$name.err"
    echo "wanted: $line"
  fi
  if [ -n "${SHOAL_ERRORS_MD:-}" ]; then
    printf '| cli_%s | %s | `%s` |\n' "$name" "$what" "$(cat "$name.err")" >> "$SHOAL_ERRORS_MD"
  fi
  if ls out.* > /dev/null 2>&1; then
    fail "$name: left an output file:"
    ls out.*
    rm -f out.*
  fi
}

# ---- 1, 2: a stopped run, then a run with other settings on its journal ----
"$shoal" forecast --data "$train" $fit --max-steps $stop_steps --threads 1 --out stop.csv \
  > stop.log 2> stop.err &
pid=$!
i=0
while [ "$(cat stop.csv.journal 2> /dev/null | wc -l)" -lt 1 ]; do
  i=$((i + 1))
  [ $i -gt 30000 ] && { fail "no journal line after 300 s"; kill -9 $pid; break; }
  sleep 0.01
done
kill -INT $pid
status=0
wait $pid || status=$?
[ "$status" -eq 130 ] || { fail "interrupted forecast: status $status, wanted 130"; cat stop.err; }
[ -e stop.csv ] && fail "interrupted forecast: wrote stop.csv"
[ -s stop.csv.journal ] || fail "interrupted forecast: no journal kept"
grep -q "interrupted with .* not run; nothing written" stop.err || { fail "no interrupt line"; cat stop.err; }
if [ -n "${SHOAL_RELIABILITY_MD:-}" ]; then
  printf '| %s | %s | %s | `%s` |\n' forecast_sigint \
    '`shoal forecast` (one model per series) stopped by SIGINT after one series' "$status" \
    "$(tail -n 1 stop.err)" >> "$SHOAL_RELIABILITY_MD"
fi
expect stale_journal_other_settings \
  'the same `--out` rerun with `--max-steps 10 --seed 3`: the journal is not reused' 2 \
  "$shoal" forecast --data "$train" $fit --max-steps 10 --seed 3 --threads 1 --out stop.csv
grep -q "other settings or data.*--no-resume" stale_journal_other_settings.err ||
  fail "stale journal: message does not name --no-resume"
[ -e stop.csv ] && fail "stale journal: wrote stop.csv"
expect partial_failure 'the same with `--no-resume`: one series too short, three fit' 4 \
  "$shoal" forecast --data "$train" $fit --max-steps 10 --seed 3 --threads 1 --out stop.csv \
  --no-resume
grep -q "series 'Z_short' failed: " partial_failure.err || fail "partial: the failed series is not listed"
[ "$(tail -n +2 stop.csv | cut -d, -f1 | sort -u | wc -l)" -eq 3 ] || fail "partial: not 3 series"
[ -e stop.csv.journal ] && fail "partial: journal of a finished run kept"
expect allow_failures 'the same with `--allow-failures`' 0 \
  "$shoal" forecast --data "$train" $fit --max-steps 10 --seed 3 --threads 1 --out stop.csv \
  --allow-failures
# The same data under another name with other values: another key (content, not path).
sed 's/^N1402,1,2640$/N1402,1,2641/' "$train" > train2.csv
"$shoal" forecast --data "$train" $fit --max-steps $key_steps --threads 1 --out key.csv > /dev/null 2>&1 &
pid=$!
i=0
while [ "$(cat key.csv.journal 2> /dev/null | wc -l)" -lt 1 ] && [ $i -lt 30000 ]; do
  i=$((i + 1))
  sleep 0.01
done
kill -INT $pid
wait $pid || true
expect stale_journal_other_data 'rerun on data with one other value after a stop' 2 \
  "$shoal" forecast --data train2.csv $fit --max-steps $key_steps --threads 1 --out key.csv
rm -f key.csv.journal

# ---- 2: setup errors are one error, not one failure per series ----
printf 'not a safetensors file' > bad.safetensors
expect_error forecast_hist_exog_unknown '`--hist-exog price` (no such column)' \
  "shoal: error: tiny_train.csv: field 'price': no exogenous column named 'price' (expected no exogenous columns in this file, got no such column)" \
  "$shoal" forecast --data "$train" $fit --max-steps 10 --hist-exog price --out out.csv
expect_error forecast_input_size_too_long '`--input-size 500`, longer than every series' \
  "shoal: error: tiny_train.csv: field 'input_size': time series is too short for training (expected at least 500 training rows (input_size 500 without start padding), got 50 rows)" \
  "$shoal" forecast --data "$train" --model tsmixerx --h 6 --input-size 500 --seasonality 12 \
  --max-steps 10 --out out.csv
expect_error forecast_init_weights_garbage '`--init-weights` a text file' \
  "shoal: error: bad.safetensors: field 'header': header length exceeds the file (expected <= 14, got 7021991845529153390)" \
  "$shoal" forecast --data "$train" $fit --max-steps 10 --init-weights bad.safetensors \
  --out out.csv
expect forecast_max_steps_unallocatable '`--max-steps 1000000000000000`' 2 \
  "$shoal" forecast --data "$train" $fit --max-steps 1000000000000000 --out out.csv
[ "$(wc -l < forecast_max_steps_unallocatable.err)" -eq 1 ] &&
  grep -q "^shoal: error: field 'max_steps': max_steps is more than this machine can train" \
    forecast_max_steps_unallocatable.err || fail "max_steps: not one line naming max_steps"

# ---- 3: inputs checked before training ----
expect_error forecast_futr_exog_without_values '`--futr-exog price` without `--futr-df`' \
  "shoal: error: --futr-exog needs the future values of its columns: give them with --futr-df" \
  "$shoal" forecast --data "$train" $fit --max-steps 10 --futr-exog price --out out.csv
expect_error forecast_test_missing '`--test nope.csv`' \
  "shoal: error: nope.csv: cannot open file (expected a readable file, got No such file or directory)" \
  "$shoal" forecast --data "$train" $fit --max-steps 10 --test nope.csv --out out.csv
head -n 20 tiny_test.csv > short_test.csv
expect_error forecast_test_lacks_rows '`--test` without the rows of every series' \
  "shoal: error: short_test.csv: field 'ds': test data lacks the 6 rows after the end of series 'N1403' (expected 6 rows from ds 51, got 1 rows from ds 51)" \
  "$shoal" forecast --data "$train" $fit --max-steps 10 --test short_test.csv --out out.csv

# ---- 4: paths ----
cp "$train" data.csv
expect_error out_is_the_input '`--out data.csv --data data.csv`' \
  "shoal: error: data.csv: field '--out': the output would replace an input of the run (expected a path that is none of the inputs, got the same file as input 'data.csv')" \
  "$shoal" forecast --data data.csv --model naive --h 6 --out data.csv
cmp -s data.csv "$train" || fail "out_is_the_input: the input was changed"
mkdir -p folder
expect_error out_is_a_folder '`--out` an existing folder' \
  "shoal: error: folder: field '--out': output path is not a regular file; it is left as it is (expected a file path, got a folder)" \
  "$shoal" forecast --data "$train" --model naive --h 6 --out folder
expect_error out_is_a_device '`--out /dev/null`' \
  "shoal: error: /dev/null: field '--out': output path is not a regular file; it is left as it is (expected a file path, got a device)" \
  "$shoal" forecast --data "$train" --model naive --h 6 --out /dev/null
[ -c /dev/null ] || fail "out_is_a_device: /dev/null is no longer a device"
expect_error out_in_missing_folder '`--out nowhere/out.csv`' \
  "shoal: error: nowhere/out.csv: field '--out': the output's folder does not exist (expected a path in an existing folder, got no folder 'nowhere')" \
  "$shoal" forecast --data "$train" --model naive --h 6 --out nowhere/out.csv
mkfifo fifo.csv
expect_error data_is_a_fifo '`--data` a FIFO (no hang)' \
  "shoal: error: fifo.csv: cannot read input (expected a regular file, got a FIFO (named pipe))" \
  timeout 20 "$shoal" forecast --data fifo.csv --model naive --h 6 --out out.csv
printf 'stale' > done.csv.tmp.999999999
expect stale_temp_cleaned 'a `done.csv.tmp.PID` left by a killed run, then a run into done.csv' 0 \
  "$shoal" forecast --data "$train" --model naive --h 6 --seasonality 12 --out done.csv
[ -e done.csv.tmp.999999999 ] && fail "stale_temp_cleaned: the stale temporary file is still there"

# ---- 5: one run per output; --no-resume leaves no stale output ----
cat > jobs.jsonl <<JOBS
{"id": "n", "data": "$train", "model": "naive", "config": {"h": 6}}
JOBS
printf '{"id": "m", "data": "%s/../mlp/sample.csv", "model": "mlp_regressor", "config": {"epochs": 1}}\n' \
  "$examples" > mlp_jobs.jsonl
mkdir -p fl
flock fl/.lock sleep 3 &
holder=$!
sleep 0.5
expect second_fleet_same_out 'a second `shoal fleet --out fl` while one runs' 2 \
  "$shoal" fleet --jobs jobs.jsonl --out fl --quiet
grep -q "another shoal run is writing this output" second_fleet_same_out.err || fail "no lock message"
flock stop.csv.lock sleep 3 &
holder2=$!
sleep 0.5
expect second_forecast_same_out 'a second `shoal forecast --out stop.csv` while one runs' 2 \
  "$shoal" forecast --data "$train" --model naive --h 6 --out stop.csv
wait $holder $holder2
rm -f stop.csv.lock
expect fleet_forecasts 'a fleet of forecasts into fl' 0 "$shoal" fleet --jobs jobs.jsonl --out fl --quiet
[ -s fl/forecasts.csv ] || fail "fleet_forecasts: no forecasts.csv"
expect fleet_no_resume_other_jobs '`--no-resume` into fl with an MLP-only jobs file' 0 \
  "$shoal" fleet --jobs mlp_jobs.jsonl --out fl --quiet --no-resume
[ -e fl/forecasts.csv ] && fail "fleet_no_resume_other_jobs: a stale forecasts.csv is left"
[ -e fl/.lock ] && fail "fleet: the lock file is left"

# ---- 7: numbers ----
expect_error mlp_seed_negative '`shoal mlp train --seed -1`' \
  "shoal: error: --seed: expected an integer in 0..2^64-1, got -1 (see shoal --help)" \
  "$shoal" mlp train --data "$examples/../mlp/sample.csv" --seed -1
expect_error ncf_seed_too_large '`shoal ncf train --seed 18446744073709551616`' \
  "shoal: error: --seed: expected an integer in 0..2^64-1, got 18446744073709551616 (see shoal --help)" \
  "$shoal" ncf train --train x.rating --seed 18446744073709551616
expect_error forecast_seed_negative '`shoal forecast --seed -1`' \
  "shoal: error: field 'random_seed': config 'random_seed' must be an integer in [0, 2^64), got -1 (expected an integer in [0, 18446744073709551615], got -1)" \
  "$shoal" forecast --data "$train" $fit --seed -1 --out out.csv
expect_error forecast_memory_limit_negative '`shoal forecast --memory-limit-mb -1`' \
  "shoal: error: --memory-limit-mb must be a finite number ≥ 0 (0: none), got -1" \
  "$shoal" forecast --data "$train" $fit --memory-limit-mb -1 --out out.csv
expect_error fleet_memory_limit_negative '`shoal fleet --memory-limit -1G`' \
  "shoal: error: field '--memory-limit': cannot read the memory limit (expected bytes, or a number with K, M or G (e.g. 512M, 2G), got -1G)" \
  "$shoal" fleet --jobs jobs.jsonl --out out.fl --memory-limit -1G
expect threads_capped '`shoal forecast --threads 100000`' 0 \
  "$shoal" forecast --data "$train" --model naive --h 6 --seasonality 12 --threads 100000 --out capped.csv
grep -q "more than the .* CPUs this process may use; using" threads_capped.err || fail "no --threads note"

if [ "$fails" -ne 0 ]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "cli-reliability-ok"
