// Internal to src/shoal/kernels: Highway for a kernel file compiled once per target. No include
// guard: hwy/foreach_target.h includes the kernel file again for every target, and with it
// this header, whose highway.h then defines that target's operations.
//
// GCC 12's AVX-512 intrinsics initialise their "undefined" vectors from themselves, which its
// -Wuninitialized reports once inlined (GCC bug 105593). The diagnostics are silenced for these
// headers' lines only; shoal's own code keeps them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <hwy/highway.h>
#pragma GCC diagnostic pop
