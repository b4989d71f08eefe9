// copy_row: copies a short row of T (embedding rows, context rows: 8..64 elements) without a
// libc memmove call per row. std::copy_n on a runtime length becomes a call into memmove, whose
// dispatch costs more than the copy at these widths; here 32-byte blocks are fixed-size memcpys
// (inlined as vector moves) and the tail is scalar.
#pragma once

#include <cstring>

#include "shoal/core/tensor.h"

namespace shoal {

template <class T>
inline void copy_row(const T* __restrict src, Index n, T* __restrict dst) {
  constexpr Index kBlock = 32 / static_cast<Index>(sizeof(T));
  Index j = 0;
  for (; j + kBlock <= n; j += kBlock) std::memcpy(dst + j, src + j, 32);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 8
#endif
  for (; j < n; ++j) dst[j] = src[j];
}

}  // namespace shoal
