#include "shoal/layers/losses.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "shoal/kernels/reduce.h"

namespace shoal::layers {

using kernels::lane_sum;

namespace {

template <class T>
struct ElemParams {
  T delta, q;
};

template <class T>
T sign(T v) {
  return static_cast<T>((v > T(0)) - (v < T(0)));  // sign(0) = 0, as torch.abs's gradient
}

// x where finite, else 0 (neuralforecast's _divide_no_nan on one element).
template <class T>
T finite_or_zero(T x) {
  return std::isfinite(x) ? x : T(0);
}

template <LossKind K, class T>
T elem_loss(T p, T y, const ElemParams<T>& a) {
  const T e = p - y;
  if constexpr (K == LossKind::kMae || K == LossKind::kMase) {
    return std::abs(e);
  } else if constexpr (K == LossKind::kMse || K == LossKind::kRmse) {
    return e * e;
  } else if constexpr (K == LossKind::kMape) {
    return std::abs(e) * finite_or_zero(T(1) / std::abs(y));
  } else if constexpr (K == LossKind::kSmape) {
    return T(2) * finite_or_zero(std::abs(e) / (std::abs(y) + std::abs(p)));
  } else if constexpr (K == LossKind::kHuber) {
    const T ae = std::abs(e);
    return ae < a.delta ? T(0.5) * e * e : a.delta * (ae - T(0.5) * a.delta);
  } else {
    return e > T(0) ? (T(1) - a.q) * e : -a.q * e;
  }
}

template <LossKind K, class T>
T elem_grad(T p, T y, const ElemParams<T>& a) {
  const T e = p - y;
  if constexpr (K == LossKind::kMae || K == LossKind::kMase) {
    return sign(e);
  } else if constexpr (K == LossKind::kMse || K == LossKind::kRmse) {
    return T(2) * e;
  } else if constexpr (K == LossKind::kMape) {
    return sign(e) * finite_or_zero(T(1) / std::abs(y));
  } else if constexpr (K == LossKind::kSmape) {
    const T s = std::abs(y) + std::abs(p);
    if (!std::isfinite(std::abs(e) / s)) return T(0);
    return T(2) * (sign(e) - std::abs(e) * sign(p) / s) / s;
  } else if constexpr (K == LossKind::kHuber) {
    return e < -a.delta ? -a.delta : (e > a.delta ? a.delta : e);
  } else {
    return e > T(0) ? T(1) - a.q : (e < T(0) ? -a.q : T(0.5) - a.q);
  }
}

// Which of mask / weight / col_weight are present, as compile-time flags, so the per-element
// weight product has no branches in the inner loops.
template <bool kM, bool kW, bool kC>
struct WeightFlags {
  static constexpr bool mask = kM, weight = kW, col = kC;
};

template <class Flags, class T>
struct RowWeight {
  const T* m = nullptr;
  const T* w = nullptr;
  const T* c = nullptr;
  RowWeight(const LossWeights<T>& lw, Index n) : c(lw.col_weight) {
    if constexpr (Flags::mask) m = lw.mask.row(n);
    if constexpr (Flags::weight) w = lw.weight.row(n);
  }
  T operator()(Index j) const {
    T v = T(1);
    if constexpr (Flags::mask) v *= m[j];
    if constexpr (Flags::weight) v *= w[j];
    if constexpr (Flags::col) v *= c[j];
    return v;
  }
};

template <class T, class Body>
void with_weight_flags(const LossWeights<T>& w, Body&& body) {
  const int code = (w.mask.data != nullptr ? 4 : 0) | (w.weight.data != nullptr ? 2 : 0) |
                   (w.col_weight != nullptr ? 1 : 0);
  switch (code) {
    case 0:
      body(WeightFlags<false, false, false>{});
      break;
    case 1:
      body(WeightFlags<false, false, true>{});
      break;
    case 2:
      body(WeightFlags<false, true, false>{});
      break;
    case 3:
      body(WeightFlags<false, true, true>{});
      break;
    case 4:
      body(WeightFlags<true, false, false>{});
      break;
    case 5:
      body(WeightFlags<true, false, true>{});
      break;
    case 6:
      body(WeightFlags<true, true, false>{});
      break;
    default:
      body(WeightFlags<true, true, true>{});
      break;
  }
}

template <LossKind K>
using KindTag = std::integral_constant<LossKind, K>;

template <class Body>
void with_kind(LossKind kind, Body&& body) {
  switch (kind) {
    case LossKind::kMae:
      body(KindTag<LossKind::kMae>{});
      break;
    case LossKind::kMse:
      body(KindTag<LossKind::kMse>{});
      break;
    case LossKind::kRmse:
      body(KindTag<LossKind::kRmse>{});
      break;
    case LossKind::kMape:
      body(KindTag<LossKind::kMape>{});
      break;
    case LossKind::kSmape:
      body(KindTag<LossKind::kSmape>{});
      break;
    case LossKind::kMase:
      body(KindTag<LossKind::kMase>{});
      break;
    case LossKind::kHuber:
      body(KindTag<LossKind::kHuber>{});
      break;
    case LossKind::kQuantile:
      body(KindTag<LossKind::kQuantile>{});
      break;
    case LossKind::kMultiQuantile:
    case LossKind::kNormal:
    case LossKind::kStudentT:
    case LossKind::kPoisson:
    case LossKind::kGmm:
      break;  // not point losses: the constructor refuses them
  }
}

// A view whose rows are contiguous (ld == cols) as one row, so per-row work runs once.
template <class V>
V flat(V v) {
  return v.data != nullptr && v.ld == v.cols ? V(v.data, 1, v.rows * v.cols) : v;
}

// Contiguous views with at most a mask (one series: [B·H, 1]) as one row each: the row loops
// of forward / backward / chunk then pay their set-up once, not per element.
template <class T>
bool flatten(ConstMat<T>& pred, ConstMat<T>& target, ConstMat<T>& mask, MatView<T>* dpred) {
  const auto contiguous = [](const auto& v) { return v.data == nullptr || v.ld == v.cols; };
  if (!contiguous(pred) || !contiguous(target) || !contiguous(mask) ||
      (dpred != nullptr && !contiguous(*dpred)))
    return false;
  pred = flat(pred);
  target = flat(target);
  mask = flat(mask);
  if (dpred != nullptr) *dpred = flat(*dpred);
  return true;
}

template <class T>
void check_weights(ConstMat<T> pred, const LossWeights<T>& w) {
  SHOAL_DCHECK(w.mask.data == nullptr || (w.mask.rows == pred.rows && w.mask.cols == pred.cols));
  SHOAL_DCHECK(w.weight.data == nullptr ||
               (w.weight.rows == pred.rows && w.weight.cols == pred.cols));
  (void)pred;
  (void)w;
}

// The per-row horizon weight and per-column MASE factor of the row-structured path (a loss
// with either); rows keep their [B·H, N] layout there, so row r is horizon step r mod H.
template <class T>
struct RowTerms {
  std::span<const double> hw;      // [H] or empty
  std::span<const double> factor;  // [N] or empty
  T row(Index r) const { return hw.empty() ? T(1) : static_cast<T>(hw[size_t(r) % hw.size()]); }
  T col(Index j) const { return factor.empty() ? T(1) : static_cast<T>(factor[size_t(j)]); }
};

}  // namespace

template <class T>
PointLoss<T>::PointLoss(Config c) : cfg(std::move(c)) {
  SHOAL_CHECK(is_point_loss(cfg.kind),
              "PointLoss takes a point loss; MQLoss and DistributionLoss are ForecastLoss's");
  SHOAL_CHECK(cfg.kind != LossKind::kHuber || cfg.delta > 0, "Huber loss delta must be > 0, got {}",
              cfg.delta);
  SHOAL_CHECK(cfg.kind != LossKind::kQuantile || (cfg.q > 0 && cfg.q < 1),
              "quantile loss q must be in (0, 1), got {}", cfg.q);
  SHOAL_CHECK(cfg.kind != LossKind::kMase || cfg.seasonality >= 1,
              "MASE seasonality must be ≥ 1, got {}", cfg.seasonality);
}

template <class T>
void PointLoss<T>::set_insample(const T* x, Index windows, Index input_size, Index n_series) {
  if (cfg.kind != LossKind::kMase) return;
  factor_.assign(size_t(n_series), 0.0);
  const Index s = cfg.seasonality, l = input_size, n = n_series;
  for (Index b = 0; b < windows; ++b) {
    const T* w = x + b * l * n;
    for (Index k = 0; k < n; ++k) {
      double sum = 0;
      for (Index t = s; t < l; ++t)
        sum +=
            std::abs(static_cast<double>(w[t * n + k]) - static_cast<double>(w[(t - s) * n + k]));
      // The mean of no differences (L ≤ s) is NaN in torch: that window adds nothing.
      const double scale = l > s ? sum / static_cast<double>(l - s) : 0.0;
      if (scale > 0 && std::isfinite(scale)) factor_[size_t(k)] += 1.0 / scale;
    }
  }
}

template <class T>
double PointLoss<T>::denominator(ConstMat<T> mask, Index rows, Index cols) const {
  const std::span<const double> hw = cfg.horizon_weight;
  if (hw.empty())
    return mask.data == nullptr ? static_cast<double>(rows) * static_cast<double>(cols)
                                : mask_sum(mask);
  double den = 0;
  for (Index r = 0; r < rows; ++r) {
    double row = static_cast<double>(cols);
    if (mask.data != nullptr) {
      const T* m = mask.row(r);
      row = lane_sum(cols, [&](Index j) { return static_cast<double>(m[j]); });
    }
    den += row * hw[size_t(r) % hw.size()];
  }
  return den;
}

template <class T>
double PointLoss<T>::finish(double mean) const {
  return cfg.kind == LossKind::kRmse ? std::sqrt(mean) : mean;
}

template <class T>
double PointLoss<T>::finish_grad(double mean) const {
  if (cfg.kind != LossKind::kRmse) return 1.0;
  // torch's sqrt backward at 0 gives 0·inf = NaN; a perfect fit has no gradient here.
  return mean > 0 ? 0.5 / std::sqrt(mean) : 0.0;
}

template <class T>
double PointLoss<T>::forward(ConstMat<T> pred, ConstMat<T> target, const LossWeights<T>& given) {
  SHOAL_DCHECK(pred.rows == target.rows && pred.cols == target.cols);
  check_weights(pred, given);
  LossWeights<T> w = given;
  const RowTerms<T> rt{cfg.horizon_weight, factor_};
  const bool rows_kept = !rt.hw.empty() || cfg.kind == LossKind::kMase;
  SHOAL_DCHECK(rt.hw.empty() || pred.rows % Index(rt.hw.size()) == 0);
  SHOAL_DCHECK(cfg.kind != LossKind::kMase || Index(factor_.size()) == pred.cols);
  if (w.weight.data == nullptr && w.col_weight == nullptr && !rows_kept)
    flatten<T>(pred, target, w.mask, nullptr);
  const ElemParams<T> a{static_cast<T>(cfg.delta), static_cast<T>(cfg.q)};
  double num = 0;
  double den = 0;
  with_kind(cfg.kind, [&](auto kind) {
    with_weight_flags(w, [&](auto flags) {
      using Flags = decltype(flags);
      constexpr LossKind kK = decltype(kind)::value;
      for (Index n = 0; n < pred.rows; ++n) {
        const T* p = pred.row(n);
        const T* y = target.row(n);
        const RowWeight<Flags, T> wt(w, n);
        if (rows_kept) {
          const T rw = rt.row(n);
          num += lane_sum(pred.cols, [&](Index j) {
            return static_cast<double>(elem_loss<kK>(p[j], y[j], a) * wt(j) * rw * rt.col(j));
          });
          den += lane_sum(pred.cols, [&](Index j) { return static_cast<double>(wt(j) * rw); });
        } else if constexpr (!Flags::mask && !Flags::weight && !Flags::col) {
          num += lane_sum(pred.cols, [&](Index j) {
            return static_cast<double>(elem_loss<kK>(p[j], y[j], a));
          });
        } else {
          num += lane_sum(pred.cols, [&](Index j) {
            return static_cast<double>(elem_loss<kK>(p[j], y[j], a) * wt(j));
          });
          den += lane_sum(pred.cols, [&](Index j) { return static_cast<double>(wt(j)); });
        }
      }
      if constexpr (!Flags::mask && !Flags::weight && !Flags::col)
        if (!rows_kept) den = static_cast<double>(pred.rows) * static_cast<double>(pred.cols);
    });
  });
  const double ratio = num / den;
  num_finite_ = std::isfinite(num);
  if (!std::isfinite(ratio)) {
    inv_den_ = 0;
    return 0;
  }
  inv_den_ = finish_grad(ratio) / den;
  return finish(ratio);
}

template <class T>
double mask_sum(ConstMat<T> mask) {
  mask = flat(mask);
  double s = 0;
  for (Index r = 0; r < mask.rows; ++r) {
    const T* m = mask.row(r);
    s += lane_sum(mask.cols, [&](Index j) { return static_cast<double>(m[j]); });
  }
  return s;
}
template double mask_sum<float>(ConstMat<float>);
template double mask_sum<double>(ConstMat<double>);

namespace {

// chunk() of a loss with a horizon weight or MASE's factor: rows keep their [B·H, N] layout.
template <LossKind K, class T>
double chunk_rows_kept(ConstMat<T> pred, ConstMat<T> target, ConstMat<T> mask, MatView<T> dpred,
                       T scale, ElemParams<T> a, const RowTerms<T>& rt) {
  double num = 0;
  for (Index r = 0; r < pred.rows; ++r) {
    const T* p = pred.row(r);
    const T* y = target.row(r);
    const T* m = mask.data == nullptr ? nullptr : mask.row(r);
    T* d = dpred.row(r);
    const T rw = rt.row(r);
    num += lane_sum(pred.cols, [&](Index j) {
      const T l = elem_loss<K>(p[j], y[j], a) * rw * rt.col(j);
      return static_cast<double>(m == nullptr ? l : l * m[j]);
    });
    for (Index j = 0; j < pred.cols; ++j)
      d[j] = scale * elem_grad<K>(p[j], y[j], a) * rw * rt.col(j) * (m == nullptr ? T(1) : m[j]);
  }
  return num;
}

}  // namespace

template <class T>
double PointLoss<T>::chunk(ConstMat<T> pred, ConstMat<T> target, ConstMat<T> mask, MatView<T> dpred,
                           T scale) const {
  const RowTerms<T> rt{cfg.horizon_weight, factor_};
  const ElemParams<T> params{static_cast<T>(cfg.delta), static_cast<T>(cfg.q)};
  double num = 0;
  if (!rt.hw.empty() || cfg.kind == LossKind::kMase) {
    with_kind(cfg.kind, [&](auto kind) {
      num = chunk_rows_kept<decltype(kind)::value>(pred, target, mask, dpred, scale, params, rt);
    });
    return num;
  }
  flatten<T>(pred, target, mask, &dpred);
  with_kind(cfg.kind, [&](auto kind) {
    constexpr LossKind K = decltype(kind)::value;
    // Locals, not the caller's through the closure: a store through d could alias those, and
    // the store loop would reload them per element.
    const T s = scale;
    const ElemParams<T> a = params;
    for (Index r = 0; r < pred.rows; ++r) {
      const T* p = pred.row(r);
      const T* y = target.row(r);
      const T* m = mask.data == nullptr ? nullptr : mask.row(r);
      T* d = dpred.row(r);
      num += lane_sum(pred.cols, [&](Index j) {
        const T l = elem_loss<K>(p[j], y[j], a);
        return static_cast<double>(m == nullptr ? l : l * m[j]);
      });
      for (Index j = 0; j < pred.cols; ++j)
        d[j] = s * elem_grad<K>(p[j], y[j], a) * (m == nullptr ? T(1) : m[j]);
    }
  });
  return num;
}

template <class T>
void PointLoss<T>::backward(ConstMat<T> pred, ConstMat<T> target, MatView<T> dpred,
                            const LossWeights<T>& given, double dloss) const {
  SHOAL_DCHECK(pred.rows == target.rows && pred.cols == target.cols && dpred.rows == pred.rows &&
               dpred.cols == pred.cols);
  check_weights(pred, given);
  LossWeights<T> w = given;
  const RowTerms<T> rt{cfg.horizon_weight, factor_};
  const bool rows_kept = !rt.hw.empty() || cfg.kind == LossKind::kMase;
  if (w.weight.data == nullptr && w.col_weight == nullptr && !rows_kept)
    flatten<T>(pred, target, w.mask, &dpred);
  const T scale = static_cast<T>(dloss * inv_den_);
  if (inv_den_ == 0) {
    for (Index n = 0; n < dpred.rows; ++n)
      for (Index j = 0; j < dpred.cols; ++j) dpred(n, j) = T(0);
    return;
  }
  const ElemParams<T> a{static_cast<T>(cfg.delta), static_cast<T>(cfg.q)};
  with_kind(cfg.kind, [&](auto kind) {
    with_weight_flags(w, [&](auto flags) {
      using Flags = decltype(flags);
      constexpr LossKind kK = decltype(kind)::value;
      for (Index n = 0; n < pred.rows; ++n) {
        const T* p = pred.row(n);
        const T* y = target.row(n);
        T* d = dpred.row(n);
        const RowWeight<Flags, T> wt(w, n);
        if (rows_kept) {
          const T rs = scale * rt.row(n);
          for (Index j = 0; j < pred.cols; ++j)
            d[j] = rs * elem_grad<kK>(p[j], y[j], a) * wt(j) * rt.col(j);
          continue;
        }
        for (Index j = 0; j < pred.cols; ++j) d[j] = scale * elem_grad<kK>(p[j], y[j], a) * wt(j);
      }
    });
  });
}

namespace {

template <class T>
T bce_elem(T z, T y) {
  return std::max(z, T(0)) - z * y + std::log1p(std::exp(-std::abs(z)));
}

template <class T>
T sigmoid(T z) {
  // exp of a non-positive argument only: no overflow for any z.
  if (z >= T(0)) return T(1) / (T(1) + std::exp(-z));
  const T e = std::exp(z);
  return e / (T(1) + e);
}

}  // namespace

template <class T>
double BceWithLogitsLoss<T>::forward(ConstMat<T> logits, ConstMat<T> target,
                                     ConstMat<T> weight) const {
  SHOAL_DCHECK(logits.rows == target.rows && logits.cols == target.cols);
  SHOAL_DCHECK(weight.data == nullptr ||
               (weight.rows == logits.rows && weight.cols == logits.cols));
  double sum = 0;
  for (Index n = 0; n < logits.rows; ++n) {
    const T* z = logits.row(n);
    const T* y = target.row(n);
    if (weight.data == nullptr) {
      sum +=
          lane_sum(logits.cols, [&](Index j) { return static_cast<double>(bce_elem(z[j], y[j])); });
    } else {
      const T* w = weight.row(n);
      sum += lane_sum(logits.cols,
                      [&](Index j) { return static_cast<double>(w[j] * bce_elem(z[j], y[j])); });
    }
  }
  return sum / (static_cast<double>(logits.rows) * static_cast<double>(logits.cols));
}

template <class T>
void BceWithLogitsLoss<T>::backward(ConstMat<T> logits, ConstMat<T> target, MatView<T> dlogits,
                                    ConstMat<T> weight, double dloss) const {
  SHOAL_DCHECK(logits.rows == target.rows && logits.cols == target.cols &&
               dlogits.rows == logits.rows && dlogits.cols == logits.cols);
  const T scale =
      static_cast<T>(dloss / (static_cast<double>(logits.rows) * static_cast<double>(logits.cols)));
  for (Index n = 0; n < logits.rows; ++n) {
    const T* z = logits.row(n);
    const T* y = target.row(n);
    T* d = dlogits.row(n);
    const T* w = weight.data != nullptr ? weight.row(n) : nullptr;
    for (Index j = 0; j < logits.cols; ++j) {
      const T g = scale * (sigmoid(z[j]) - y[j]);
      d[j] = w != nullptr ? g * w[j] : g;
    }
  }
}

template struct PointLoss<float>;
template struct PointLoss<double>;
template struct BceWithLogitsLoss<float>;
template struct BceWithLogitsLoss<double>;

}  // namespace shoal::layers
