#!/usr/bin/env bash
# The two quick-start commands (see README):
#   ./dev.sh demo   install what the build needs, build the CLI (release) and run a fleet of
#                   forecasters on the shipped M3 sample (tools/demo.sh)
#   ./dev.sh test   install dependencies, build release (+ the Python extension) and ASan+UBSan,
#                   run the whole test suite (ctest for both, pytest tests/python); ends with
#                   the time each step took and "N passed, M failed"
# Also: ./dev.sh build [preset], ./dev.sh lint (clang-format check),
#       ./dev.sh tidy [files...] (clang-tidy; all sources when no file is named)
set -euo pipefail
cd "$(dirname "$0")"
jobs=$(nproc)

# build PRESET [TARGET...]: configures and builds the preset (only TARGETs when named).
build() {
  local preset=$1
  shift
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs" ${1:+--target "$@"}
}

# timed NAME COMMAND...: runs COMMAND and records how long it took for the closing table.
step_times=()
timed() {
  local name=$1 start rc=0
  shift
  start=$(date +%s)
  "$@" || rc=$?
  step_times+=("$(printf '%-34s %5d s' "$name" $(($(date +%s) - start)))")
  return $rc
}

# Runs one preset's tests; appends "passed failed" to $counts.
run_tests() {
  local preset=$1 log
  log=$(mktemp)
  set +e
  ctest --preset "$preset" -j "$jobs" 2>&1 | tee "$log" | grep -E "tests passed|Failed|\*\*\*|FAILED" 
  set -e
  local line total failed
  line=$(grep -E "tests passed, [0-9]+ tests failed out of [0-9]+" "$log" | tail -1)
  if [ -z "$line" ]; then
    echo "shoal: ctest ($preset) produced no summary" >&2
    counts+=("0 1")
  else
    failed=$(echo "$line" | sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/')
    total=$(echo "$line" | sed -E 's/.* tests failed out of ([0-9]+).*/\1/')
    counts+=("$((total - failed)) $failed")
  fi
  rm -f "$log"
}

# Runs the Python suite against the extension built in build/release (SHOAL_PYTHON); appends
# "passed failed" to $counts.
run_pytest() {
  local log line passed failed errors
  log=$(mktemp)
  set +e
  PYTHONPATH="$PWD/build/release/python" build/pyenv/bin/python -m pytest -q -p no:cacheprovider \
    tests/python 2>&1 | tee "$log" | tail -25
  set -e
  line=$(grep -E "[0-9]+ (passed|failed|error)" "$log" | tail -1)
  if [ -z "$line" ]; then
    echo "shoal: pytest produced no summary" >&2
    counts+=("0 1")
  else
    passed=$(echo "$line" | grep -oE "[0-9]+ passed" | grep -oE "[0-9]+" || echo 0)
    failed=$(echo "$line" | grep -oE "[0-9]+ failed" | grep -oE "[0-9]+" || echo 0)
    errors=$(echo "$line" | grep -oE "[0-9]+ errors?" | grep -oE "[0-9]+" || echo 0)
    counts+=("$passed $((failed + errors))")
  fi
  rm -f "$log"
}

lint() {
  local files
  files=$(git ls-files '*.h' '*.cpp')
  # shellcheck disable=SC2086
  clang-format --dry-run -Werror $files
}

tidy() {
  cmake --preset release >/dev/null
  local files=("$@")
  if [ ${#files[@]} -eq 0 ]; then
    mapfile -t files < <(git ls-files 'src/*.cpp' 'cli/*.cpp')
  fi
  # gcc-only warning flags in the compile database are unknown to clang.
  clang-tidy -p build/release --quiet --extra-arg=-Wno-unknown-warning-option "${files[@]}"
}

cmd=${1:-}
case "$cmd" in
  demo)
    tools/install-deps.sh --build
    build release shoal_cli
    # One TSMixerx per series on shipped M3 monthly series, with every core; accuracy on the
    # held-out 18 months next to seasonal naive, and fits/s (examples/forecast/README.md).
    tools/demo.sh build/release/shoal build/demo-fleet
    ;;
  test)
    timed "install dependencies" tools/install-deps.sh
    counts=()
    echo "== format check"
    if timed "format check" lint; then counts+=("1 0"); else counts+=("0 1"); fi
    echo "== release build and tests (with the Python extension)"
    cmake --preset release -DSHOAL_PYTHON=ON -DPython_EXECUTABLE="$PWD/build/pyenv/bin/python" \
      >/dev/null
    timed "release build" build release
    # The ASan+UBSan build runs beside the release tests and pytest: they leave a core idle much
    # of the time (one long test at the end of ctest, pytest on one core), and the sanitizer
    # build is the longest step.
    echo "== ASan+UBSan build, in the background (build/asan-build.log)"
    asan_start=$(date +%s)
    build asan >build/asan-build.log 2>&1 &
    asan_build=$!
    timed "release tests (ctest)" run_tests release
    echo "== Python tests"
    timed "Python tests (pytest)" run_pytest
    echo "== ASan+UBSan tests"
    asan_rc=0
    wait "$asan_build" || asan_rc=$?
    step_times+=("$(printf '%-34s %5d s' "ASan+UBSan build (from its start)" \
      $(($(date +%s) - asan_start)))")
    if [ "$asan_rc" -eq 0 ]; then
      timed "ASan+UBSan tests (ctest)" run_tests asan
    else
      tail -40 build/asan-build.log
      echo "shoal: the ASan+UBSan build failed (build/asan-build.log)" >&2
      counts+=("0 1")
    fi
    passed=0 failed=0
    for c in "${counts[@]}"; do
      passed=$((passed + ${c% *}))
      failed=$((failed + ${c#* }))
    done
    echo "== time per step"
    printf '%s\n' "${step_times[@]}"
    echo "${passed} passed, ${failed} failed"
    [ "$failed" -eq 0 ]
    ;;
  build) tools/install-deps.sh; build "${2:-release}" ;;
  lint) lint ;;
  tidy) shift; tidy "$@" ;;
  *) echo "usage: ./dev.sh demo|test|build [preset]|lint|tidy [files]" >&2; exit 2 ;;
esac
