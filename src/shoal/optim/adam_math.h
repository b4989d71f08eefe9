// The per-vector arithmetic of torch.optim.Adam (single-tensor path), shared by the dense pass
// and SparseAdam's dense_eps mode so that the two cannot drift apart.
#pragma once

#include "simd_map.h"

namespace shoal::optim::detail {

// m = exp_avg.lerp_(g, 1 - β1); v = exp_avg_sq.mul_(β2).addcmul_(g, g, value=1 - β2)
template <class T>
inline void adam_moments(const Vec<T>& g, Vec<T>& m, Vec<T>& v, T lerp_w, T beta2,
                         T one_minus_beta2) {
  m = m + lerp_w * (g - m);
  v = v * beta2 + one_minus_beta2 * g * g;
}

// param.addcdiv_(m, sqrt(v) / sqrt(1 - β2^t) + eps, value=-step_size): p + (value·m) / denom,
// with the division by the step's scalar √(1 − β2^t) done as a multiply by its reciprocal
// (inv_bias2_sqrt, rounded once per step): the denominator is then within an ulp or so of
// torch's. The loop is bound by the divider (√ and two divisions per vector, ≈ 12 cycles per
// 8 floats on Zen 3); one division fewer made it ≈ 25% faster.
template <class T>
inline void adam_apply(Vec<T>& p, const Vec<T>& m, const Vec<T>& v, T neg_step_size,
                       T inv_bias2_sqrt, T eps) {
  p = p + (neg_step_size * m) / (stdx::sqrt(v) * inv_bias2_sqrt + eps);
}

}  // namespace shoal::optim::detail
