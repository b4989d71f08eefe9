#include <algorithm>
#include <cmath>

#include "shoal/kernels/optim_update.h"

namespace shoal::kernels {

template <class T>
void adam_update_ref(AdamDecay decay, bool amsgrad, Index n, T* p, const T* g, T* m, T* v, T* vmax,
                     const AdamScalars<T>& s) {
  for (Index i = 0; i < n; ++i) {
    T gd = g[i];
    if (decay == AdamDecay::kDecoupled) p[i] = p[i] * s.decay;
    if (decay == AdamDecay::kL2) gd = g[i] + s.weight_decay * p[i];
    m[i] = m[i] + s.lerp_w * (gd - m[i]);
    v[i] = v[i] * s.beta2 + s.one_minus_beta2 * gd * gd;
    T vv = v[i];
    if (amsgrad) {
      vmax[i] = std::max(vmax[i], v[i]);
      vv = vmax[i];
    }
    p[i] = p[i] + (s.neg_step_size * m[i]) / (std::sqrt(vv) * s.inv_bias2_sqrt + s.eps);
  }
}

template <class T>
void sgd_update_ref(Index n, T* p, const T* g, T* buf, const SgdScalars<T>& s) {
  for (Index i = 0; i < n; ++i) {
    const T gd = s.decay ? T(g[i] + s.weight_decay * p[i]) : g[i];
    if (buf == nullptr) {
      p[i] = p[i] + s.neg_lr * gd;
      continue;
    }
    buf[i] = s.first ? gd : T(buf[i] * s.momentum + s.one_minus_damp * gd);
    p[i] = p[i] + s.neg_lr * (s.nesterov ? T(gd + s.momentum * buf[i]) : buf[i]);
  }
}

template <class T>
void sparse_adam_update_ref(Index n, T* p, const T* g, T* m, T* v, T lerp_w1, T lerp_w2,
                            T neg_step_size, T eps) {
  for (Index i = 0; i < n; ++i) {
    m[i] = m[i] + T((g[i] - m[i]) * lerp_w1);
    v[i] = v[i] + T((g[i] * g[i] - v[i]) * lerp_w2);
    p[i] = p[i] + neg_step_size * T(m[i] / (std::sqrt(v[i]) + eps));
  }
}

template <class T>
void sparse_rows_update_ref(std::span<const int32_t> rows, std::span<const SparseTable<T>> tables,
                            const SparseStep<T>& s) {
  for (size_t k = 0; k < rows.size(); ++k)
    for (const SparseTable<T>& t : tables) {
      const Index o = static_cast<Index>(rows[k]) * t.width;
      const T* g = t.grad(static_cast<Index>(k));
      if (s.dense_eps)
        adam_update_ref<T>(AdamDecay::kNone, false, t.width, t.value + o, g, t.m + o, t.v + o,
                           nullptr, s.adam);
      else
        sparse_adam_update_ref<T>(t.width, t.value + o, g, t.m + o, t.v + o, s.sparse.lerp_w1,
                                  s.sparse.lerp_w2, s.sparse.neg_step_size, s.sparse.eps);
    }
}

#define SHOAL_INSTANTIATE(T)                                                                      \
  template void sparse_rows_update_ref<T>(std::span<const int32_t>,                               \
                                          std::span<const SparseTable<T>>, const SparseStep<T>&); \
  template void adam_update_ref<T>(AdamDecay, bool, Index, T*, const T*, T*, T*, T*,              \
                                   const AdamScalars<T>&);                                        \
  template void sgd_update_ref<T>(Index, T*, const T*, T*, const SgdScalars<T>&);                 \
  template void sparse_adam_update_ref<T>(Index, T*, const T*, T*, T*, T, T, T, T);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::kernels
