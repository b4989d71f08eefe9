#!/bin/sh
# The profiler from the command line, one case per call (ctest checks the output against each
# case's pattern in tests/CMakeLists.txt). SHOAL_PROFILE_MEASURE=0 is set by ctest: the traces'
# validity is checked, not the machine's roofs.
#   cli_profile.sh mlp-trace SHOAL PYTHON SOURCE_DIR WORK_DIR
#       `mlp train --profile trace`: a trace the stdlib-only validator accepts (strict JSON,
#       fields, per-thread nesting, <= 130 bytes per event), the report and the summary
#   cli_profile.sh forecast-trace SHOAL PYTHON SOURCE_DIR WORK_DIR
#       `forecast --profile trace` through the fleet: a trace process per model ("fleet" and one
#       per series), valid and nested
#   cli_profile.sh diff-loop SHOAL PYTHON SOURCE_DIR WORK_DIR
#       two profiled runs (1 thread, then 2; the second's trace gzipped), their memory footer and
#       advice, and `profile diff` of the two with its HTML report
#   cli_profile.sh fleet-bounded SHOAL PYTHON SOURCE_DIR WORK_DIR
#       a small --profile-events drops (and counts) the rest of a fleet's trace, which stays
#       valid; the footer shows the plans, the fleet's bytes against its budget and the advice
#   cli_profile.sh diff-bad-input SHOAL PYTHON SOURCE_DIR WORK_DIR
#       `profile diff` of files that are not summaries: one error line, exit status 2
set -eu
case=$1 shoal=$2 python=$3 src=$4 work=$5
mlp_data=$src/examples/mlp/sample.csv
series=$src/examples/forecast/tiny_train.csv
validate="$src/tools/validate_trace.py"
rm -rf "$work" && mkdir -p "$work"
case $case in
  mlp-trace)
    "$shoal" mlp train --data "$mlp_data" --epochs 2 --threads 2 --profile trace \
      --profile-out "$work"
    "$python" "$validate" "$work/mlp.pt.trace.json" --max-bytes-per-event 130
    test -s "$work/mlp.report.html"
    test -s "$work/mlp.summary.json"
    ;;
  forecast-trace)
    "$shoal" forecast --data "$series" --model tsmixerx --h 6 --input-size 12 --n-series 1 \
      --threads 2 --max-steps 10 --seasonality 12 --out "$work/f.csv" --profile trace \
      --profile-out "$work" 2>&1
    "$python" "$validate" "$work/forecast.pt.trace.json" --max-bytes-per-event 160
    grep -q '"process_name","pid":1,' "$work/forecast.pt.trace.json"
    test -s "$work/forecast.report.html"
    echo profile-ok
    ;;
  diff-loop)
    "$shoal" mlp train --data "$mlp_data" --epochs 2 --threads 1 --profile stats \
      --profile-out "$work/a"
    "$shoal" mlp train --data "$mlp_data" --epochs 2 --threads 2 --profile trace --profile-gzip \
      --profile-out "$work/b"
    gzip -dc "$work/b/mlp.pt.trace.json.gz" > "$work/b.json"
    "$python" "$validate" "$work/b.json"
    "$shoal" profile diff "$work/a" "$work/b/mlp.summary.json" --html "$work/diff.html"
    grep -q 'Per step phase and zone' "$work/diff.html"
    echo diff-ok
    ;;
  fleet-bounded)
    "$shoal" forecast --data "$series" --model tsmixerx --h 6 --input-size 12 --n-series 1 \
      --threads 2 --max-steps 10 --seasonality 12 --memory-limit-mb 64 --profile-events 300 \
      --profile-models 2 --out "$work/f.csv" --profile trace --profile-out "$work" 2>&1
    "$python" "$validate" "$work/forecast.pt.trace.json"
    ;;
  diff-bad-input)
    status=0
    "$shoal" profile diff "$src/README.md" "$src/README.md" 2>&1 || status=$?
    echo "exit=$status"
    ;;
  *) echo "usage: cli_profile.sh mlp-trace|forecast-trace|diff-loop|fleet-bounded|diff-bad-input ..." >&2; exit 2 ;;
esac
