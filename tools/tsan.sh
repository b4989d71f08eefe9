#!/usr/bin/env bash
# ThreadSanitizer over the code that runs threads: the thread pool, the fleet (jobs on worker
# threads, journal, memory budget), the multi-threaded trainers (MLP and NCF with threads > 1,
# forecasting fits) and the profiler's recorder, which pool threads write to. Builds the tsan
# preset (gcc, -fsanitize=thread, -O1 -g) and runs those tests with halt_on_error=1, so the
# first race fails its test with both stacks printed.
#   tools/tsan.sh [extra ctest args...]        e.g. tools/tsan.sh -R NcfTrainer
# Not part of ./dev.sh test (CI time); see docs/reliability.md.
set -euo pipefail
cd "$(dirname "$0")/.."

tests='^(SplitRange|ThreadPool|Fleet|FleetCrash|FleetJobs|WriteFileAtomic|MlpTrainer|NcfTrainer|ForecastFit|Recorder|ForecastProfile)\.'

cmake --preset tsan >/dev/null
nice -n 10 cmake --build --preset tsan -j "$(nproc)" >/dev/null
# Uninstrumented libraries (OpenBLAS, libxsmm) are called from one thread at a time in these
# tests; tools/tsan.supp lists what is suppressed, with why.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=4 suppressions=$PWD/tools/tsan.supp"
start=$(date +%s)
set +e
nice -n 10 ctest --test-dir build/tsan -R "$tests" --output-on-failure -j 1 "$@" 2>&1 |
  tee build/tsan/tsan.log | grep -E "Test +#|tests passed|WARNING: ThreadSanitizer|SUMMARY: ThreadSanitizer"
rc=${PIPESTATUS[0]}
set -e
races=$(grep -c "WARNING: ThreadSanitizer" build/tsan/tsan.log || true)
echo "---- tsan: $(grep -E 'tests passed' build/tsan/tsan.log | tail -1), ThreadSanitizer reports: ${races}, $(($(date +%s) - start)) s, $(uptime | sed 's/.*load/load/')"
exit "$rc"
