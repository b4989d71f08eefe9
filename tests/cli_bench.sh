#!/bin/sh
# `shoal bench` subcommands end to end (timings are not checked, only that every case is
# reported and the JSON is written):
#   cli_bench.sh fusion SHOAL WORK_DIR
set -eu
case=$1
shift
case $case in
  fusion)
    shoal=$1 work=$2
    mkdir -p "$work"
    "$shoal" bench fusion --reps 3 --widths 1,3 --rows 5 --json "$work/bench_fusion.json"
    grep -q '"crossover_width"' "$work/bench_fusion.json"
    echo json-ok
    ;;
  *)
    echo "cli_bench.sh: unknown case '$case'" >&2
    exit 2
    ;;
esac
