// Gradient clipping by the global norm: torch.nn.utils.clip_grad_norm_, which Lightning runs
// for a trainer's gradient_clip_val (algorithm "norm"): every gradient is multiplied by
//   c = min(1, max_norm / (‖g‖₂ + 1e-6)),   ‖g‖₂ over every trainable parameter's gradient.
// Split in two so data-parallel steps can sum the squares chunk by chunk (in a fixed order)
// before any chunk is scaled.
#pragma once

#include <algorithm>
#include <cmath>

#include "shoal/core/arena.h"
#include "shoal/kernels/reduce.h"

namespace shoal::optim {

// Σ g² over grads [begin, end), in double.
template <class T>
double grad_square_sum(const T* grads, Index begin, Index end) {
  return kernels::lane_sum(end - begin, [&](Index i) {
    const double g = double(grads[begin + i]);
    return g * g;
  });
}

// The factor the gradients are multiplied by, given Σ g² over all of them.
inline double clip_coefficient(double square_sum, double max_norm) {
  return std::min(1.0, max_norm / (std::sqrt(square_sum) + 1e-6));
}

// Clips the arena's dense gradients in place to global norm ≤ max_norm (max_norm > 0).
template <class T>
void clip_grad_norm(const Arena& arena, double max_norm) {
  T* g = arena.grads<T>();
  const Index n = arena.dense_param_elems();
  const T c = static_cast<T>(clip_coefficient(grad_square_sum(g, 0, n), max_norm));
  for (Index i = 0; i < n; ++i) g[i] *= c;
}

}  // namespace shoal::optim
