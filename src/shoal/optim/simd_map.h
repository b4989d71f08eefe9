// simd_map: runs one elementwise update over n elements of several flat arrays with
// std::experimental::simd, so the loop is vectorised whatever the compiler flags.
//
// The last partial vector is copied into zero-padded stack lanes and run through the same
// vector code, so every element sees identical arithmetic wherever a range starts or ends:
// thread splits cannot change a single bit. Pointers to const are inputs; others are updated.
#pragma once

#include <array>
#include <cstddef>
// GCC 12's AVX-512 intrinsics initialise their "undefined" vectors from themselves, which its
// -Wuninitialized reports once inlined into a -march with AVX-512 (GCC bug 105593). The
// diagnostics are silenced for those headers' lines only; shoal's own code keeps them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <experimental/simd>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#pragma GCC diagnostic pop
#include <type_traits>
#include <utility>

#include "shoal/core/tensor.h"

namespace shoal::optim::detail {

namespace stdx = std::experimental;

template <class T>
using Vec = stdx::native_simd<T>;

template <class T, class F, class... P, size_t... I>
inline void simd_map_impl(Index n, F& f, std::index_sequence<I...>, P*... ptrs) {
  using V = Vec<T>;
  constexpr Index kW = static_cast<Index>(V::size());
  constexpr size_t kN = sizeof...(P);
  const auto store = [](auto* dst, const V& v) {
    if constexpr (!std::is_const_v<std::remove_pointer_t<decltype(dst)>>)
      v.copy_to(dst, stdx::element_aligned);
  };
  Index i = 0;
  for (; i + kW <= n; i += kW) {
    std::array<V, kN> v = {V(ptrs + i, stdx::element_aligned)...};
    f(v[I]...);
    (store(ptrs + i, v[I]), ...);
  }
  if (i == n) return;
  const Index rest = n - i;
  alignas(64) T lanes[kN][static_cast<size_t>(kW)] = {};
  const auto gather = [&](size_t k, const T* src) {
    for (Index j = 0; j < rest; ++j) lanes[k][j] = src[i + j];
  };
  (gather(I, ptrs), ...);
  std::array<V, kN> v = {V(lanes[I], stdx::element_aligned)...};
  f(v[I]...);
  const auto scatter = [&](size_t k, auto* dst) {
    if constexpr (!std::is_const_v<std::remove_pointer_t<decltype(dst)>>) {
      v[k].copy_to(lanes[k], stdx::element_aligned);
      for (Index j = 0; j < rest; ++j) dst[i + j] = lanes[k][j];
    }
  };
  (scatter(I, ptrs), ...);
}

// f(V&... ) is called once per vector with one value per pointer, in pointer order.
template <class T, class F, class... P>
inline void simd_map(Index n, F&& f, P*... ptrs) {
  static_assert((std::is_same_v<std::remove_const_t<P>, T> && ...), "all arrays must be T");
  simd_map_impl<T>(n, f, std::index_sequence_for<P...>{}, ptrs...);
}

}  // namespace shoal::optim::detail
