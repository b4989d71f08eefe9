#!/bin/sh
# The SHOAL_ISA setting end to end, one case per call (ctest checks each case's output against
# its pattern in tests/CMakeLists.txt):
#   cli_isa.sh path ISA SHOAL TEST_BINARY
#       a test binary (the kernel or optimizer suite) on one SIMD path; a path this CPU cannot
#       run, or that is not this architecture's, is refused by `shoal --version` and reported as
#       "isa path skipped: ..." (ctest: skipped)
#   cli_isa.sh unknown SHOAL
#       an unknown SHOAL_ISA value: refused, the allowed values named, a non-zero exit
set -eu
case=$1
shift
case $case in
  path)
    isa=$1 shoal=$2 tests=$3
    if ! SHOAL_ISA=$isa "$shoal" --version >/dev/null 2>&1; then
      echo "isa path skipped: this CPU does not run $isa ($(uname -m))"
      exit 0
    fi
    SHOAL_ISA=$isa "$tests" --gtest_brief=1
    ;;
  unknown)
    shoal=$1
    status=0
    SHOAL_ISA=avx9 "$shoal" --version 2>&1 || status=$?
    echo "exit=$status"
    ;;
  *)
    echo "cli_isa.sh: unknown case '$case'" >&2
    exit 2
    ;;
esac
