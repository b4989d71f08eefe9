// Scoring many items for one user (recommendation): see Ncf::score_user in models/ncf.h.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "shoal/kernels/gemm.h"
#include "shoal/kernels/relu_tower_score.h"
#include "shoal/models/ncf.h"

namespace shoal::models {
namespace {

template <class T>
std::vector<T> transposed(ConstMat<T> w) {
  std::vector<T> t(static_cast<size_t>(w.rows * w.cols));
  for (Index o = 0; o < w.rows; ++o)
    for (Index k = 0; k < w.cols; ++k) t[static_cast<size_t>(k * w.rows + o)] = w(o, k);
  return t;
}

}  // namespace

template <class T>
typename Ncf<T>::ScoringTables Ncf<T>::scoring_tables() const {
  ScoringTables s;
  if (!has_mlp()) return s;
  const Index e = cfg_.layers[0] / 2, l1 = tower_[0].cfg.out;
  s.item_proj.resize(static_cast<size_t>(cfg_.num_items * l1));
  const ConstMat<T> w = tower_[0].p.weight.value.mat();
  const ConstMat<T> items = tables_[static_cast<size_t>(mlp_item_)].layer.p.weight.value.mat();
  kernels::linear_forward<T>(items, ConstMat<T>(w.data + e, l1, e, w.ld), nullptr,
                             kernels::Act::kNone,
                             MatView<T>(s.item_proj.data(), cfg_.num_items, l1), MatView<T>{});
  if (tower_.size() == 3) {
    s.w2_t = transposed<T>(tower_[1].p.weight.value.mat());
    s.w3_t = transposed<T>(tower_[2].p.weight.value.mat());
  }
  return s;
}

// The user's part of the first layer: b + P_m[u]·W_uᵀ + c·W_cᵀ, into user_part_.
template <class T>
void Ncf<T>::form_user_part(Id user, const T* context_row) {
  const Index e = cfg_.layers[0] / 2, c = cfg_.context, l1 = tower_[0].cfg.out;
  const ConstMat<T> w = tower_[0].p.weight.value.mat();
  const T* pu = tables_[static_cast<size_t>(mlp_user_)].layer.p.weight.value.mat().row(user);
  const T* b = tower_[0].cfg.bias ? tower_[0].p.bias.value.data : nullptr;
  user_part_.resize(static_cast<size_t>(l1));
  for (Index j = 0; j < l1; ++j) {
    const T* wr = w.row(j);
    T z = b ? b[j] : T(0);
    for (Index k = 0; k < e; ++k) z += pu[k] * wr[k];
    for (Index k = 0; k < c; ++k) z += context_row[k] * wr[2 * e + k];
    user_part_[static_cast<size_t>(j)] = z;
  }
}

template <class T>
MatView<T> Ncf<T>::score_user(const Ctx& ctx, Id user, const T* context_row,
                              std::span<const Id> items, const ScoringTables& tables) {
  const auto n = static_cast<Index>(items.size());
  SHOAL_DCHECK(user >= 0 && user < cfg_.num_users);
  const MatView<T> h = h_.mat().rows_block(0, n);
  const Index f = has_gmf() ? cfg_.factors : 0;
  const Index l1 = has_mlp() ? tower_[0].cfg.out : 0;
  if (has_mlp()) form_user_part(user, context_row);
  if constexpr (std::is_same_v<T, float>) {
    if (has_mlp() && tower_.size() == 3 && !tables.w2_t.empty() &&
        kernels::relu_tower_score_supported(l1, tower_[1].cfg.out, tower_[2].cfg.out)) {
      // gu = P_g[u] ⊙ the predict weight's GMF part: the GMF side is one dot per pair.
      const T* wp = predict_.p.weight.value.data;
      gmf_part_.resize(static_cast<size_t>(f));
      if (f > 0) {
        const T* pu = tables_[static_cast<size_t>(gmf_user_)].layer.p.weight.value.mat().row(user);
        for (Index j = 0; j < f; ++j) gmf_part_[static_cast<size_t>(j)] = pu[j] * wp[j];
      }
      const MatView<T> out = out_.mat().rows_block(0, n);
      const T* qg =
          f > 0 ? tables_[static_cast<size_t>(gmf_item_)].layer.p.weight.value.data : nullptr;
      kernels::relu_tower_score({.n = n,
                                 .items = items.data(),
                                 .l1 = l1,
                                 .l2 = tower_[1].cfg.out,
                                 .l3 = tower_[2].cfg.out,
                                 .f = f,
                                 .a = user_part_.data(),
                                 .proj_i = tables.item_proj.data(),
                                 .w2_t = tables.w2_t.data(),
                                 .b2 = tower_[1].p.bias.value.data,
                                 .w3_t = tables.w3_t.data(),
                                 .b3 = tower_[2].p.bias.value.data,
                                 .gu = gmf_part_.data(),
                                 .qg = qg,
                                 .wp3 = wp + f,
                                 .bp = predict_.p.bias.value.data[0],
                                 .logits = out.data});
      return out;
    }
  }
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
    const T* __restrict a = user_part_.data();
    const MatView<T> y0 =
        tower_.size() > 1 ? acts_[0].mat().rows_block(0, n) : h.cols_block(f, cfg_.layers.back());
    for (Index r = 0; r < n; ++r) {
      const T* __restrict p =
          tables.item_proj.data() + static_cast<Index>(items[static_cast<size_t>(r)]) * l1;
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
  template Ncf<T>::ScoringTables Ncf<T>::scoring_tables() const;                                  \
  template void Ncf<T>::form_user_part(int32_t, const T*);                                        \
  template MatView<T> Ncf<T>::score_user(const Ctx&, int32_t, const T*, std::span<const int32_t>, \
                                         const ScoringTables&);                                   \
  template double Ncf<T>::scoring_flops_per_pair() const;
SHOAL_NCF_SCORING(float)
SHOAL_NCF_SCORING(double)
#undef SHOAL_NCF_SCORING

}  // namespace shoal::models
