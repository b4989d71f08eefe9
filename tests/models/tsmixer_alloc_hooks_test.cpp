// The allocation-counting hooks for the test_models binary (see support/alloc_counter.h), in
// a translation unit of their own so that GCC does not see new/free pairs inlined together.
// Not under AddressSanitizer: alloc_hooks.inc replaces operator new but not its nothrow form,
// which std::stable_sort's temporary buffer (Arena::layout) uses, so ASan reports an
// alloc-dealloc mismatch. The zero-allocation checks run in the release build.
#if !defined(__SANITIZE_ADDRESS__)
#include "support/alloc_hooks.inc"
#endif
