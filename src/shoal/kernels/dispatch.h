// Internal to src/shoal/kernels: how a kernel entry point calls its per-target implementation.
// SHOAL_DISPATCH(fn) settles the process's path (SHOAL_ISA, once) and calls Highway's table
// entry for it; after the first call that is a predicted branch and an indirect call.
#pragma once

#include <hwy/highway.h>

#include <type_traits>

#include "shoal/kernels/isa.h"

namespace shoal::kernels::detail {

inline void settle_isa() {
  static const bool settled = (static_cast<void>(active_isa()), true);
  static_cast<void>(settled);
}

}  // namespace shoal::kernels::detail

#define SHOAL_DISPATCH(fn) (::shoal::kernels::detail::settle_isa(), HWY_DYNAMIC_DISPATCH(fn))

// Exports a kernel's float and double instantiations, name_f32 and name_f64, for SHOAL_DISPATCH.
#define SHOAL_EXPORT_BOTH(name) \
  HWY_EXPORT(name##_f32);       \
  HWY_EXPORT(name##_f64);

// The body of a kernel template's entry point: calls the float or the double table entry, as T
// is (used inside `template <class T> ... f(args) { SHOAL_BY_TYPE(f, args); }`).
#define SHOAL_BY_TYPE(name, ...)                    \
  if constexpr (std::is_same_v<T, float>)           \
    return SHOAL_DISPATCH(name##_f32)(__VA_ARGS__); \
  else                                              \
    return SHOAL_DISPATCH(name##_f64)(__VA_ARGS__)
