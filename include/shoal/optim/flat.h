// Helpers shared by the flat optimizers: how a step's pass over the dense prefix of the arena
// is split between threads.
//
// Every optimizer here is elementwise, so any split gives the same numbers as one pass; the
// kernels also compute every element with the same SIMD code (tails go through a padded
// vector), so results are bitwise identical for any split, aligned or not. Splitting on
// 64-byte boundaries (what split_flat does) only avoids two threads writing one cache line.
#pragma once

#include <algorithm>

#include "shoal/core/arena.h"

namespace shoal::optim {

struct FlatRange {
  Index begin = 0;
  Index end = 0;
  Index size() const { return end - begin; }
};

// Part `part` of `parts` near-equal pieces of [0, n), with inner boundaries on multiples of
// `align` elements (use kArenaAlign / sizeof(T)). Empty pieces are possible when n is small.
inline FlatRange split_flat(Index n, int parts, int part, Index align) {
  SHOAL_CHECK(parts > 0 && part >= 0 && part < parts && align > 0 && n >= 0,
              "split_flat: bad arguments n={} parts={} part={} align={}", n, parts, part, align);
  const Index blocks = (n + align - 1) / align;
  const auto at = [&](int k) { return std::min(n, blocks * k / parts * align); };
  return {at(part), at(part + 1)};
}

// The same for a typed arena: split of [0, arena.dense_param_elems()).
template <class T>
FlatRange split_dense(const Arena& arena, int parts, int part) {
  return split_flat(arena.dense_param_elems(), parts, part,
                    static_cast<Index>(kArenaAlign / sizeof(T)));
}

}  // namespace shoal::optim
