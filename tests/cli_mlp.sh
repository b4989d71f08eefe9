#!/bin/sh
# `shoal mlp train`'s refusals, one case per call (ctest checks each case's output against its
# pattern in tests/CMakeLists.txt); the exit status is printed, as the refusal must be an error:
#   cli_mlp.sh missing-column SHOAL SOURCE_DIR   a --target the CSV does not have: its columns named
#   cli_mlp.sh missing-file SHOAL                a --data file that does not exist
set -u
case=$1
shoal=$2
case $case in
  missing-column) "$shoal" mlp train --data "$3/examples/mlp/sample.csv" --target nope 2>&1 ;;
  missing-file) "$shoal" mlp train --data /nonexistent.csv 2>&1 ;;
  *)
    echo "cli_mlp.sh: unknown case '$case'" >&2
    exit 2
    ;;
esac
echo "exit=$?"
