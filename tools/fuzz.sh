#!/usr/bin/env bash
# Builds the libFuzzer targets (preset fuzz: clang, ASan + UBSan) and runs each for a while.
#   tools/fuzz.sh [seconds-per-target] [target...]     e.g. tools/fuzz.sh 600 series ncf
# Targets are the fuzz/<name>_fuzz.cpp files (default: all), run one after another, each at
# nice 10 on one core, starting from its seed corpus fuzz/corpus/<name>/. New inputs go to a
# scratch corpus (build/fuzz/corpus/<name>/, or $SHOAL_FUZZ_SCRATCH/<name>/), kept between runs;
# crashes, leaks, timeouts and out-of-memory inputs go to fuzz/findings/<name>/. A finding stops
# that target; fix it, add the input as a regression test (tests/fuzz_regressions/), rerun.
# Reproduce one: build/fuzz/fuzz/<name>_fuzz fuzz/findings/<name>/crash-...
# Prints one summary line per target; exits non-zero when any target found something.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for f in fuzz/*_fuzz.cpp; do targets+=("$(basename "$f" _fuzz.cpp)"); done
fi

tools/install-deps.sh --fuzz >/dev/null
cmake --preset fuzz >/dev/null
nice -n 10 cmake --build --preset fuzz -j "$(nproc)" >/dev/null

scratch_root=${SHOAL_FUZZ_SCRATCH:-build/fuzz/corpus}
log_dir=build/fuzz/logs
mkdir -p "$log_dir"
summary=()
status=0
for t in "${targets[@]}"; do
  binary=build/fuzz/fuzz/${t}_fuzz
  [ -x "$binary" ] || { echo "shoal: no fuzz target '$t' ($binary)" >&2; exit 2; }
  scratch=$scratch_root/$t
  findings=fuzz/findings/$t
  mkdir -p "$scratch" "$findings"
  before=$(find "$findings" -type f | wc -l)
  log=$log_dir/$t.log
  echo "shoal: fuzzing $t for ${seconds}s (log: $log)" >&2
  started=$(date +%s)
  set +e
  nice -n 10 "$binary" "$scratch" "fuzz/corpus/$t" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$findings/" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  set -e
  elapsed=$(($(date +%s) - started))
  found=$(($(find "$findings" -type f | wc -l) - before))
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  rate=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  new_units=$(grep -oE 'stat::new_units_added: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -1 || true)
  initial=$(grep -E 'INITED cov:' "$log" | grep -oE 'cov: [0-9]+' | head -1 || true)
  line="$t: ${elapsed}s, ${runs} runs (${rate}/s), ${new_units} new inputs, ${cov:-cov: ?} (at start ${initial:-?}), findings ${found}, exit ${rc}"
  echo "$line"
  summary+=("$line")
  if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
    status=1
    grep -E 'ERROR: |SUMMARY: |Test unit written' "$log" | head -5 >&2 || true
  fi
done
echo "---- fuzz summary ($(date -u '+%Y-%m-%d %H:%M UTC'), $(uptime | sed 's/.*load/load/'))"
printf '%s\n' "${summary[@]}"
exit $status
