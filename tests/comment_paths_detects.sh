#!/bin/sh
# The comment-path check itself must fail on a tree whose comment names a file that is not
# there: it is given one such file, and its report and exit status are printed for ctest to match.
#   tests/comment_paths_detects.sh PYTHON SOURCE_DIR WORK_DIR
set -u
python=$1 src=$2 work=$3
mkdir -p "$work/src"
printf '// see docs/gone.md\n' >"$work/src/a.cpp"
"$python" "$src/tools/check_comment_paths.py" "$work"
echo "exit=$?"
