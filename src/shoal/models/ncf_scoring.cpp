// Scoring many items for one user (recommendation): see Ncf::score_user in models/ncf.h.
#include <algorithm>

#include "shoal/kernels/gemm.h"
#include "shoal/models/ncf.h"

namespace shoal::models {

template <class T>
void Ncf<T>::item_projections(MatView<T> out) const {
  if (!has_mlp()) return;
  const Index e = cfg_.layers[0] / 2, l1 = tower_[0].cfg.out;
  SHOAL_CHECK(out.rows == cfg_.num_items && out.cols == l1,
              "item projections: [{}, {}] for [{}, {}]", out.rows, out.cols, cfg_.num_items, l1);
  const ConstMat<T> w = tower_[0].p.weight.value.mat();
  const ConstMat<T> items = tables_[static_cast<size_t>(mlp_item_)].layer.p.weight.value.mat();
  kernels::linear_forward<T>(items, ConstMat<T>(w.data + e, l1, e, w.ld), nullptr,
                             kernels::Act::kNone, out, MatView<T>{});
}

template <class T>
MatView<T> Ncf<T>::score_user(const Ctx& ctx, Id user, const T* context_row,
                              std::span<const Id> items, ConstMat<T> item_proj) {
  const auto n = static_cast<Index>(items.size());
  SHOAL_DCHECK(user >= 0 && user < cfg_.num_users);
  const MatView<T> h = h_.mat().rows_block(0, n);
  const Index f = has_gmf() ? cfg_.factors : 0;
  if (has_gmf()) {
    // u ⊙ q_i per item, the user's row read once.
    const T* __restrict u =
        tables_[static_cast<size_t>(gmf_user_)].layer.p.weight.value.mat().row(user);
    const ConstMat<T> qi = tables_[static_cast<size_t>(gmf_item_)].layer.p.weight.value.mat();
    for (Index r = 0; r < n; ++r) {
      const T* __restrict q = qi.row(items[static_cast<size_t>(r)]);
      T* __restrict y = h.row(r);
      for (Index j = 0; j < f; ++j) y[j] = u[j] * q[j];
    }
  }
  if (has_mlp()) {
    // The user's part of the first layer: b + P_m[u]·W_uᵀ + c·W_cᵀ, once.
    const Index e = cfg_.layers[0] / 2, c = cfg_.context, l1 = tower_[0].cfg.out;
    const ConstMat<T> w = tower_[0].p.weight.value.mat();
    const T* pu = tables_[static_cast<size_t>(mlp_user_)].layer.p.weight.value.mat().row(user);
    const T* b = tower_[0].cfg.bias ? tower_[0].p.bias.value.data : nullptr;
    user_part_.resize(static_cast<size_t>(l1));
    T* __restrict a = user_part_.data();
    for (Index j = 0; j < l1; ++j) {
      const T* wr = w.row(j);
      T z = b ? b[j] : T(0);
      for (Index k = 0; k < e; ++k) z += pu[k] * wr[k];
      for (Index k = 0; k < c; ++k) z += context_row[k] * wr[2 * e + k];
      a[j] = z;
    }
    const MatView<T> y0 =
        tower_.size() > 1 ? acts_[0].mat().rows_block(0, n) : h.cols_block(f, cfg_.layers.back());
    for (Index r = 0; r < n; ++r) {
      const T* __restrict p = item_proj.row(items[static_cast<size_t>(r)]);
      T* __restrict y = y0.row(r);
      for (Index j = 0; j < l1; ++j) {
        const T v = a[j] + p[j];
        y[j] = v > T(0) ? v : T(0);
      }
    }
    ConstMat<T> x = y0;
    for (size_t k = 1; k < tower_.size(); ++k) {
      const MatView<T> y = k + 1 < tower_.size() ? acts_[k].mat().rows_block(0, n)
                                                 : h.cols_block(f, cfg_.layers.back());
      tower_[k].forward(ctx, x, y);
      x = y;
    }
  }
  return predict_forward(n);
}

template <class T>
double Ncf<T>::scoring_flops_per_pair() const {
  double flops = 2.0 * static_cast<double>(predict_in());
  if (has_gmf()) flops += static_cast<double>(cfg_.factors);
  if (has_mlp()) {
    flops += static_cast<double>(tower_[0].cfg.out);  // the sum of the two parts
    for (size_t k = 1; k < tower_.size(); ++k)
      flops += 2.0 * static_cast<double>(tower_[k].cfg.in * tower_[k].cfg.out);
  }
  return flops;
}

#define SHOAL_NCF_SCORING(T)                                                                      \
  template void Ncf<T>::item_projections(MatView<T>) const;                                       \
  template MatView<T> Ncf<T>::score_user(const Ctx&, int32_t, const T*, std::span<const int32_t>, \
                                         ConstMat<T>);                                            \
  template double Ncf<T>::scoring_flops_per_pair() const;
SHOAL_NCF_SCORING(float)
SHOAL_NCF_SCORING(double)
#undef SHOAL_NCF_SCORING

}  // namespace shoal::models
