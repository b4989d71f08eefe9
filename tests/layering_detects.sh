#!/bin/sh
# The layering check itself must fail on a tree where core includes a trainer: it is given
# one file that does, and its report and exit status are printed for ctest to match.
#   tests/layering_detects.sh PYTHON SOURCE_DIR WORK_DIR
set -u
python=$1 src=$2 work=$3
mkdir -p "$work/src/shoal/core"
printf '#include "shoal/train/forecast_job.h"\n' >"$work/src/shoal/core/a.cpp"
"$python" "$src/tools/check_layers.py" "$work"
echo "exit=$?"
