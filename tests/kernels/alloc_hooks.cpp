// The allocation-counting hooks for the test_kernels binary (see support/alloc_counter.h), in a
// translation unit of their own so that GCC does not see new/free pairs inlined together.
#include "support/alloc_hooks.inc"
