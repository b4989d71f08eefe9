// prefetch_span: prefetches every cache line of a short row. A row that does not start on a
// line boundary spans one line more than its size suggests (an 84-byte context row at C = 21
// covers three lines when it starts in a line's last 16 bytes, a quarter of the rows), so
// prefetching its first and last element alone leaves a line to a demand miss.
//
// dense_rows: whether `used` rows in ascending order of a range of `total` rows walk it densely
// enough for the hardware prefetchers to follow; software prefetches on top of such a sweep
// only cost issue slots and fill buffers (the NCF trainer's table updates ran 40% faster
// without them).
#pragma once

#include "shoal/core/tensor.h"

namespace shoal {

// Lines of p[0, n), read (or, with kWrite, for writing).
template <bool kWrite = false, class T>
inline void prefetch_span(const T* p, Index n) {
  constexpr Index kLine = 64 / static_cast<Index>(sizeof(T));
  for (Index j = 0; j < n; j += kLine) __builtin_prefetch(p + j, kWrite ? 1 : 0);
  __builtin_prefetch(p + n - 1, kWrite ? 1 : 0);
}

// At least one row in kDenseRowsPer of the range.
inline constexpr Index kDenseRowsPer = 4;

inline bool dense_rows(Index used, Index total) {
  return used * kDenseRowsPer >= total;
}

}  // namespace shoal
