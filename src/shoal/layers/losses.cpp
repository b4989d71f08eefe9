#include "shoal/layers/losses.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "shoal/kernels/reduce.h"

namespace shoal::layers {

using kernels::lane_sum;

namespace {

template <PointLossKind K, class T>
T elem_loss(T e, T delta) {
  if constexpr (K == PointLossKind::kMae) {
    return std::abs(e);
  } else if constexpr (K == PointLossKind::kMse) {
    return e * e;
  } else {
    const T a = std::abs(e);
    return a < delta ? T(0.5) * e * e : delta * (a - T(0.5) * delta);
  }
}

template <PointLossKind K, class T>
T elem_grad(T e, T delta) {
  if constexpr (K == PointLossKind::kMae) {
    return static_cast<T>((e > T(0)) - (e < T(0)));  // sign(0) = 0
  } else if constexpr (K == PointLossKind::kMse) {
    return T(2) * e;
  } else {
    return e < -delta ? -delta : (e > delta ? delta : e);
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

template <class T, class Body>
void with_kind(PointLossKind kind, Body&& body) {
  switch (kind) {
    case PointLossKind::kMae:
      body(std::integral_constant<PointLossKind, PointLossKind::kMae>{});
      break;
    case PointLossKind::kMse:
      body(std::integral_constant<PointLossKind, PointLossKind::kMse>{});
      break;
    case PointLossKind::kHuber:
      body(std::integral_constant<PointLossKind, PointLossKind::kHuber>{});
      break;
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

}  // namespace

template <class T>
PointLoss<T>::PointLoss(Config c) : cfg(c) {
  SHOAL_CHECK(cfg.kind != PointLossKind::kHuber || cfg.delta > 0,
              "Huber loss delta must be > 0, got {}", cfg.delta);
}

template <class T>
double PointLoss<T>::forward(ConstMat<T> pred, ConstMat<T> target, const LossWeights<T>& given) {
  SHOAL_DCHECK(pred.rows == target.rows && pred.cols == target.cols);
  check_weights(pred, given);
  LossWeights<T> w = given;
  if (w.weight.data == nullptr && w.col_weight == nullptr)
    flatten<T>(pred, target, w.mask, nullptr);
  const T delta = static_cast<T>(cfg.delta);
  double num = 0;
  double den = 0;
  with_kind<T>(cfg.kind, [&](auto kind) {
    with_weight_flags(w, [&](auto flags) {
      using Flags = decltype(flags);
      constexpr PointLossKind kK = decltype(kind)::value;
      for (Index n = 0; n < pred.rows; ++n) {
        const T* p = pred.row(n);
        const T* y = target.row(n);
        const RowWeight<Flags, T> wt(w, n);
        if constexpr (!Flags::mask && !Flags::weight && !Flags::col) {
          num += lane_sum(pred.cols, [&](Index j) {
            return static_cast<double>(elem_loss<kK>(p[j] - y[j], delta));
          });
        } else {
          num += lane_sum(pred.cols, [&](Index j) {
            return static_cast<double>(elem_loss<kK>(p[j] - y[j], delta) * wt(j));
          });
          den += lane_sum(pred.cols, [&](Index j) { return static_cast<double>(wt(j)); });
        }
      }
      if constexpr (!Flags::mask && !Flags::weight && !Flags::col)
        den = static_cast<double>(pred.rows) * static_cast<double>(pred.cols);
    });
  });
  const double ratio = num / den;
  num_finite_ = std::isfinite(num);
  if (!std::isfinite(ratio)) {
    inv_den_ = 0;
    return 0;
  }
  inv_den_ = 1.0 / den;
  return ratio;
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

template <class T>
double PointLoss<T>::chunk(ConstMat<T> pred, ConstMat<T> target, ConstMat<T> mask, MatView<T> dpred,
                           T scale) const {
  flatten<T>(pred, target, mask, &dpred);
  const T delta = static_cast<T>(cfg.delta);
  double num = 0;
  with_kind<T>(cfg.kind, [&](auto kind) {
    constexpr PointLossKind K = decltype(kind)::value;
    for (Index r = 0; r < pred.rows; ++r) {
      const T* p = pred.row(r);
      const T* y = target.row(r);
      const T* m = mask.data == nullptr ? nullptr : mask.row(r);
      T* d = dpred.row(r);
      num += lane_sum(pred.cols, [&](Index j) {
        const T l = elem_loss<K>(p[j] - y[j], delta);
        return static_cast<double>(m == nullptr ? l : l * m[j]);
      });
      for (Index j = 0; j < pred.cols; ++j)
        d[j] = scale * elem_grad<K>(p[j] - y[j], delta) * (m == nullptr ? T(1) : m[j]);
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
  if (w.weight.data == nullptr && w.col_weight == nullptr) flatten<T>(pred, target, w.mask, &dpred);
  const T scale = static_cast<T>(dloss * inv_den_);
  if (inv_den_ == 0) {
    for (Index n = 0; n < dpred.rows; ++n)
      for (Index j = 0; j < dpred.cols; ++j) dpred(n, j) = T(0);
    return;
  }
  const T delta = static_cast<T>(cfg.delta);
  with_kind<T>(cfg.kind, [&](auto kind) {
    with_weight_flags(w, [&](auto flags) {
      using Flags = decltype(flags);
      constexpr PointLossKind kK = decltype(kind)::value;
      for (Index n = 0; n < pred.rows; ++n) {
        const T* p = pred.row(n);
        const T* y = target.row(n);
        T* d = dpred.row(n);
        const RowWeight<Flags, T> wt(w, n);
        for (Index j = 0; j < pred.cols; ++j)
          d[j] = scale * elem_grad<kK>(p[j] - y[j], delta) * wt(j);
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
