// Internal to src/shoal/kernels: how a kernel entry point calls its per-target implementation.
// SHOAL_DISPATCH(fn) settles the process's path (SHOAL_ISA, once) and calls Highway's table
// entry for it; after the first call that is a predicted branch and an indirect call.
#pragma once

#include <hwy/highway.h>

#include "shoal/kernels/isa.h"

namespace shoal::kernels::detail {

inline void settle_isa() {
  static const bool settled = (static_cast<void>(active_isa()), true);
  static_cast<void>(settled);
}

}  // namespace shoal::kernels::detail

#define SHOAL_DISPATCH(fn) (::shoal::kernels::detail::settle_isa(), HWY_DYNAMIC_DISPATCH(fn))
