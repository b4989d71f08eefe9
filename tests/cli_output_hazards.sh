#!/bin/sh
# Every output flag of every command against the hazards that lose a user's file: the output is
# an input of the same call (or inside or holding one), a folder holding other files, `.`, an
# existing file, a place this user may not write, and two runs writing it at once. Each case
# runs in a fresh copy of one folder of inputs and must be refused (status 2, one line) or safe
# (status 0); either way every file of the copy that is not the output itself is unchanged, and
# nothing is left beside the output (no `*.tmp.*`, no hidden `.*.old.*`, no lock).
# Usage: cli_output_hazards.sh SHOAL EXAMPLES_DIR WORK_DIR
set -eu
shoal=$1 examples=$2 work=$3
rm -rf "$work" && mkdir -p "$work/base/data" "$work/base/other"
cd "$work/base"
fail() {
  echo "FAIL $*"
}

# ---- the inputs every case starts from ----
"$shoal" synth ncf --positives 300 --users 20 --items 30 --out data/train.csv > /dev/null
awk -F, 'NR == 1 { print "user,item,timestamp"; next } { print $1 "," $2 "," NR }' \
  data/train.csv > data/inter.csv
"$shoal" ncf train --train data/train.csv --epochs 1 --factors 4 --layers 8,4 --threads 1 \
  --save model > /dev/null 2>&1
printf 'user\n1\n2\n' > users.csv
cp "$examples/tiny_train.csv" series.csv
printf '{"id": "naive", "data": "%s/series.csv", "model": "seasonal_naive", "config": {"h": 4, "seasonality": 12}}\n' \
  "$PWD" > data/jobs.jsonl
printf 'a,b,y\n1,2,3\n2,3,5\n3,4,7\n4,5,9\n5,6,11\n6,7,13\n7,8,15\n8,9,17\n' > data/mlp.csv
"$shoal" mlp train --data data/mlp.csv --target y --epochs 1 --profile stats \
  --profile-out pa > /dev/null 2>&1
cp -r pa pb
printf 'mine\n' > other/notes.txt
printf 'an existing file\n' > existing.txt
mkdir ro && printf 'x\n' > ro/keep.txt && chmod 555 ro
# Root writes into read-only folders anyway: there a read-only file system stands in (/proc/sys),
# and without one that hazard is skipped.
ro_out=ro/out
if touch ro/probe 2> /dev/null; then
  rm -f ro/probe
  root=1
  ro_out=
  [ -d /proc/sys ] && [ ! -w /proc/sys ] && ro_out=/proc/sys/shoal-out
else
  root=0
fi
cd "$work"

# run_<name> OUT: one command with OUT as the flag under test.
ncf_train="ncf train --train data/train.csv --epochs 1 --factors 4 --layers 8,4 --threads 1"
forecast="forecast --data series.csv --model seasonal_naive --h 4 --seasonality 12"
run_ncf_save() { "$shoal" $ncf_train --save "$1"; }
run_ncf_save_weights() { "$shoal" $ncf_train --save-weights "$1"; }
run_ncf_metrics_out() { "$shoal" $ncf_train --metrics-out "$1"; }
run_ncf_profile_out() { "$shoal" $ncf_train --profile stats --profile-out "$1"; }
run_recommend_out() { "$shoal" ncf recommend --model model --users users.csv --k 3 --out "$1"; }
run_split_train_out() { "$shoal" ncf split --data data/inter.csv --train-out "$1" --test-out te.csv; }
run_split_test_out() { "$shoal" ncf split --data data/inter.csv --train-out tr.csv --test-out "$1"; }
run_synth_out() { "$shoal" synth ncf --positives 50 --users 5 --items 16 --out "$1"; }
run_forecast_out() { "$shoal" $forecast --out "$1"; }
run_forecast_metrics_out() { "$shoal" $forecast --out f.csv --metrics-out "$1"; }
run_forecast_profile_out() { "$shoal" $forecast --out f.csv --profile stats --profile-out "$1"; }
run_fleet_out() { "$shoal" fleet --jobs data/jobs.jsonl --threads 1 --quiet --out "$1"; }
run_fleet_metrics_out() {
  "$shoal" fleet --jobs data/jobs.jsonl --threads 1 --quiet --out fl --metrics-out "$1"
}
run_mlp_profile_out() {
  "$shoal" mlp train --data data/mlp.csv --target y --epochs 1 --profile stats --profile-out "$1"
}
run_profile_diff_html() { "$shoal" profile diff pa pb --html "$1"; }

# Each flag: name, kind (file: one file written whole; save: a model folder; folder: a folder
# files are written into) and, for the `input` hazard, the path of (or inside, or holding) one
# of the call's inputs.
flags="ncf_save:save:data
ncf_save_weights:file:data/train.csv
ncf_metrics_out:file:data/train.csv
ncf_profile_out:folder:data
recommend_out:file:model/model.json
split_train_out:file:data/inter.csv
split_test_out:file:data/inter.csv
synth_out:file:
forecast_out:file:series.csv
forecast_metrics_out:file:series.csv
forecast_profile_out:folder:.
fleet_out:folder:data
fleet_metrics_out:file:data/jobs.jsonl
mlp_profile_out:folder:data
profile_diff_html:file:pa/mlp.summary.json"

# With SHOAL_ERRORS_MD=FILE, the refusals of one flag of each kind (and every run that would
# write nothing) append their docs/errors.md rows there.
errors_md_row() {
  case "$1" in ncf_save__* | ncf_metrics_out__* | ncf_profile_out__* | recommend_out__input | \
    *_failed | *_unknown | *_for_test) ;;
  *) return 0 ;;
  esac
  [ -n "${SHOAL_ERRORS_MD:-}" ] || return 0
  case "$2" in *"/proc/sys"*) return 0 ;; esac # machine-dependent: root's stand-in
  what=$(echo "$1" | sed 's/__/: /; s/_/ /g')
  printf '| cli_hazard_%s | %s | `%s` |\n' "$1" "$what" "$2" | sed "s|$work/||g" >> "$SHOAL_ERRORS_MD"
}

# check NAME OUT STATUS_WANTED(0|2|either) STATUS: the status, the unchanged files, no leftovers.
check() {
  name=$1 out=$2 want=$3 status=$4
  case "$want:$status" in
    either:0 | 0:0) echo "safe $name" ;;
    either:2 | 2:2)
      echo "refused $name: $(cat "$name.err")"
      errors_md_row "$name" "$(cat "$name.err")"
      [ "$(wc -l < "$name.err")" -eq 1 ] || { fail "$name: refused without one line:"; cat "$name.err"; }
      ;;
    *)
      fail "$name: status $status, wanted $want"
      cat "$name.err"
      ;;
  esac
  # Every file of the inputs' copy, bar the output itself (and what it holds), is unchanged.
  (cd base && find . -type f ! -path './ro/*') | while read -r f; do
    case "$f" in "./$out" | "./$out/"*) continue ;; esac
    cmp -s "base/$f" "case/$f" || echo "changed $f"
  done > "$name.changed"
  [ -s "$name.changed" ] && { fail "$name: a file that is not the output changed:"; cat "$name.changed"; }
  left=$(cd case && find . \( -name '*.tmp.*' -o -name '.*.old.*' -o -name '*.lock' \) -print)
  [ -n "$left" ] && fail "$name: left behind: $left"
  return 0
}

# one NAME RUN OUT WANT: runs RUN with OUT in a fresh copy of base and checks it.
one() {
  name=$1 run=$2 out=$3 want=$4
  rm -rf case && cp -a base case && chmod 755 case/ro
  [ "$root" -eq 0 ] && chmod 555 case/ro
  status=0
  (cd case && $run "$out") > "$name.log" 2> "$name.err" || status=$?
  chmod 755 case/ro
  check "$name" "$out" "$want" "$status"
}

echo "$flags" | while IFS=: read -r flag kind input; do
  run=run_$flag
  file_want=2
  [ "$kind" = folder ] && file_want=0
  # 1. an input of the call (or a folder holding one): refused, or safe beside it.
  [ -n "$input" ] && one "${flag}__input" "$run" "$input" "$file_want"
  # 2. a folder holding other files: a file or save is refused; files go into a folder beside them.
  one "${flag}__other_folder" "$run" other "$file_want"
  # 3. `.`: never replaced.
  one "${flag}__dot" "$run" . "$file_want"
  # 4. an existing file: a file output replaces it whole; a folder is never put in its place.
  want=0
  [ "$kind" != file ] && want=2
  one "${flag}__existing_file" "$run" existing.txt "$want"
  if [ "$kind" = file ]; then
    [ "$(cat case/existing.txt)" = "an existing file" ] && fail "${flag}__existing_file: not replaced"
  fi
  # 5. a folder this user may not write: refused before any work.
  if [ -n "$ro_out" ]; then
    one "${flag}__read_only" "$run" "$ro_out" "2"
  else
    echo "skip ${flag}__read_only: running as root, which writes into read-only folders"
  fi
  # 6. two runs at once on one new output: each finishes or is refused, and what is left is whole.
  rm -rf case && cp -a base case
  s1=0 s2=0
  (cd case && $run race.out) > "${flag}__race1.log" 2> "${flag}__race.err" &
  p1=$!
  (cd case && $run race.out) > "${flag}__race2.log" 2> "${flag}__race2.err" &
  p2=$!
  wait $p1 || s1=$?
  wait $p2 || s2=$?
  cat "${flag}__race2.err" >> "${flag}__race.err"
  if [ "$s1" -ne 0 ] && [ "$s2" -ne 0 ]; then
    fail "${flag}__race: both runs failed ($s1, $s2)"
    cat "${flag}__race.err"
  fi
  for s in $s1 $s2; do
    [ "$s" -eq 0 ] || [ "$s" -eq 2 ] || fail "${flag}__race: status $s"
  done
  [ -e case/race.out ] || fail "${flag}__race: no output"
  check "${flag}__race" race.out either 0
done > hazards.log 2>&1 || true

# ---- a run that produces nothing exits 2 and leaves an earlier run's outputs as they were ----
# kept NAME FILE COMMAND...: status 2 with one line, FILE (written by an earlier run) unchanged.
kept() {
  name=$1 file=$2
  shift 2
  cp "case/$file" "$name.before"
  status=0
  (cd case && "$@") > "$name.log" 2> "$name.err" || status=$?
  if [ "$status" -ne 2 ]; then
    fail "$name: status $status, wanted 2"
    cat "$name.err"
  elif cmp -s "$name.before" "case/$file"; then
    echo "refused $name: $(tail -n 1 "$name.err")"
    errors_md_row "$name" "$(tail -n 1 "$name.err")"
  else
    fail "$name: the earlier $file was replaced"
  fi
}
{
  rm -rf case && cp -a base case
  printf '{"id": "bad", "data": "%s/case/series.csv", "model": "nlinear", "config": {"h": 4, "input_size": 500, "max_steps": 2}}\n' \
    "$PWD" > case/bad_jobs.jsonl
  (cd case && run_fleet_out fl > /dev/null 2>&1)
  kept fleet_every_job_failed fl/forecasts.csv \
    "$shoal" fleet --jobs bad_jobs.jsonl --threads 1 --quiet --out fl
  (cd case && run_recommend_out recs.csv > /dev/null 2>&1)
  printf 'user\nnobody\n' > case/strangers.csv
  kept recommend_every_user_unknown recs.csv \
    "$shoal" ncf recommend --model model --users strangers.csv --on-unknown skip --out recs.csv
  (cd case && run_split_train_out tr.csv > /dev/null 2>&1)
  printf 'user,item,timestamp\n1,2,5\n2,3,6\n' > case/once.csv  # one interaction per user
  kept split_nothing_for_test te.csv \
    "$shoal" ncf split --data once.csv --train-out tr.csv --test-out te.csv
  (cd case && run_forecast_out f.csv > /dev/null 2>&1)
  kept forecast_every_series_failed f.csv \
    "$shoal" forecast --data series.csv --model nlinear --h 4 --input-size 60 --max-steps 2 \
    --n-series 1 --threads 1 --out f.csv
} >> hazards.log 2>&1
cat hazards.log
n_safe=$(grep -c '^safe' hazards.log || true)
n_refused=$(grep -c '^refused' hazards.log || true)
n_fail=$(grep -c '^FAIL' hazards.log || true)
n_skip=$(grep -c '^skip' hazards.log || true)
echo "output hazards: $(echo "$flags" | wc -l) output flags, $((n_safe + n_refused)) cases:" \
  "$n_refused refused, $n_safe safe, $n_skip skipped; $n_fail checks failed"
[ "$n_fail" -eq 0 ] && echo "cli-output-hazards-ok"
