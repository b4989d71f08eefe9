#!/bin/sh
# The demo's command. `./dev.sh demo` runs it on the shipped jobs file; the test suite (cli.demo)
# runs it on the same file cut to a few series and steps, into a fresh folder, so a demo that
# breaks fails the tests.
#   tools/demo.sh SHOAL OUT [JOBS]
# Fits one TSMixerx per series of JOBS (default: examples/forecast/demo_jobs.jsonl) with one
# pinned worker per core, writes OUT/results.jsonl, OUT/forecasts.csv and OUT/metrics.json, and
# prints sMAPE and MASE on the held-out months next to seasonal naive's, and the fits/s.
set -eu
if [ $# -lt 2 ]; then
  echo "usage: tools/demo.sh SHOAL OUT [JOBS]" >&2
  exit 2
fi
shoal=$1 out=$2
jobs=${3:-$(dirname "$0")/../examples/forecast/demo_jobs.jsonl}
exec "$shoal" fleet --jobs "$jobs" --out "$out" --no-resume --threads 0 \
  --metrics-out "$out/metrics.json"
