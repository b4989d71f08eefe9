// The allocation-counting hooks for this test binary (see support/alloc_counter.h).
#include "support/alloc_hooks.inc"
