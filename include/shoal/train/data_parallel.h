// Data parallelism inside one process: each thread trains its share of a batch on its own
// replica (an Arena sharing the source's params, see core/arena.h), then one fused pass per
// parameter chunk sums the replicas' dense grads into the source in replica order, updates the
// params and clears every replica's grads for the next step. The order of the sum is fixed, so
// a given thread count gives bitwise-identical results run after run.
#pragma once

#include <span>

#include "shoal/core/arena.h"
#include "shoal/core/thread_pool.h"

namespace shoal::train {

// Chunk size of the flat parameter pass: a multiple of the 64-byte line in elements of any T.
inline constexpr Index kParamGrain = 1024;

// For thread `tid`: grads[source] += Σ_{r ≥ 1} grads[r] over this thread's chunk, in order r =
// 1, 2, ..., then zeroes the replicas' chunk (unless kClearReplicas is false: a trainer whose
// replicas clear their own grads, so that no core writes another's lines). replicas[0] is the
// source.
template <class T, bool kClearReplicas = true>
Range reduce_grads_chunk(std::span<const Arena* const> replicas, int tid, int nthreads) {
  const Arena& source = *replicas[0];
  const Range r = split_range(source.dense_param_elems(), tid, nthreads, kParamGrain);
  T* __restrict dst = source.grads<T>();
  for (size_t k = 1; k < replicas.size(); ++k) {
    T* __restrict src = replicas[k]->grads<T>();
    for (Index i = r.begin; i < r.end; ++i) dst[i] += src[i];
    if constexpr (kClearReplicas)
      for (Index i = r.begin; i < r.end; ++i) src[i] = T(0);
  }
  return r;
}

// Clears the source's grads over a chunk (after the optimizer consumed them).
template <class T>
void zero_grads(const Arena& arena, Range r) {
  T* g = arena.grads<T>();
  for (Index i = r.begin; i < r.end; ++i) g[i] = T(0);
}

}  // namespace shoal::train
