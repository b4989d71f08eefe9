#!/bin/sh
# End to end, as a user runs it: `shoal fleet` on a jobs file of one TSMixerx per series (with a
# series too short to fit among good ones) times 4 seeds, killed with SIGKILL once some jobs are
# journalled, then rerun with the same command. The final forecasts must hold every good
# (job, series) exactly once: 3 good series x 4 seeds x 18 rows. A rerun with other settings on
# the same output must be refused.
# Usage: cli_kill_resume.sh SHOAL EXAMPLES_DIR WORK_DIR
set -eu
shoal=$1 examples=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
# Long enough to be killed mid-run; the sanitizer builds' test preset divides the steps by
# SHOAL_TEST_STEP_SCALE (they run 20-30x slower).
steps=$((150 / ${SHOAL_TEST_STEP_SCALE:-1}))
cat > "$work/jobs.jsonl" <<JOBS
{"id": "tsx", "data": "$examples/tiny_train.csv", "model": "tsmixerx", "config": {"h": 18, "input_size": 36, "max_steps": $steps, "seasonality": 12}, "sweep": {"seed": [1, 2, 3, 4]}}
JOBS
"$shoal" fleet --jobs "$work/jobs.jsonl" --out "$work/out" --threads 2 --quiet > "$work/run1.log" 2>&1 &
pid=$!
i=0
while [ "$(cat "$work/out/journal.jsonl" 2>/dev/null | wc -l)" -lt 3 ]; do
  i=$((i + 1))
  if [ $i -gt 30000 ]; then echo "no journal lines after 300 s"; kill -9 $pid; exit 1; fi
  if ! kill -0 $pid 2>/dev/null; then echo "the fleet ended before it was killed"; cat "$work/run1.log"; exit 1; fi
  sleep 0.01
done
kill -9 $pid
wait $pid 2>/dev/null || true
before=$(wc -l < "$work/out/journal.jsonl")
echo "killed with $before of 16 jobs journalled"
test ! -e "$work/out/forecasts.csv"
"$shoal" fleet --jobs "$work/jobs.jsonl" --out "$work/out" --threads 2 --quiet --allow-failures \
  --metrics-out "$work/m.json" > "$work/run2.log" 2>&1 || { cat "$work/run2.log"; exit 1; }
cat "$work/run2.log"
f=$work/out/forecasts.csv
test "$(wc -l < "$f")" -eq $((1 + 3 * 4 * 18))
# every (job, series, ds) exactly once
test "$(tail -n +2 "$f" | cut -d, -f1-3 | sort | uniq -d | wc -l)" -eq 0
for seed in 1 2 3 4; do
  for s in N1402 N1403 N1404; do
    n=$(grep -c "^tsx\[seed=$seed\]/$s,$s," "$f")
    test "$n" -eq 18 || { echo "tsx[seed=$seed]/$s has $n rows"; exit 1; }
  done
done
grep -q "Z_short" "$work/out/results.jsonl"
grep -q '"failed": 4' "$work/m.json"
grep -q '"skipped": [1-9]' "$work/m.json"
# Other settings on the same output: refused, not mixed.
sed "s/\"max_steps\": $steps,/\"max_steps\": $((steps + 1)),/" "$work/jobs.jsonl" > "$work/jobs2.jsonl"
if "$shoal" fleet --jobs "$work/jobs2.jsonl" --out "$work/out" --quiet > "$work/run3.log" 2>&1; then
  echo "a journal of other settings was accepted"; exit 1
fi
grep -q "other settings" "$work/run3.log"
echo "fleet-kill-resume-ok"
