// The optimizers' elementwise updates (optim_update.h), compiled once per target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/optim_update.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h

#include <cstddef>
#include <type_traits>
#include <utility>

#include "dispatch.h"
#include "shoal/core/prefetch.h"
#include "shoal/kernels/optim_update.h"

HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// At most 256-bit vectors: the updates are bound by memory and by the divider, whose 512-bit
// form is no faster per element on the cores measured (AMD Zen 4), and SparseAdam's rows of 8
// floats would otherwise all go through the zero-padded tail on AVX-512.
template <class T>
using Tag = hn::CappedTag<T, 32 / sizeof(T)>;

template <class D, class V, class P>
HWY_INLINE void store_back(D d, const V& v, P* dst) {
  if constexpr (!std::is_const_v<P>) hn::StoreU(v, d, dst);
}

// f(V&...) once per vector with one value per pointer, in pointer order; pointers to const are
// inputs, the others are written back. The last partial vector is copied into zero-padded
// lanes and run through the same code.
template <class D, class F, class... P, size_t... I>
HWY_INLINE void map_impl(D d, Index n, F& f, std::index_sequence<I...>, P*... ptrs) {
  using T = hn::TFromD<D>;
  using V = hn::Vec<D>;
  constexpr Index kW = static_cast<Index>(hn::MaxLanes(D()));
  constexpr size_t kN = sizeof...(P);
  Index i = 0;
  for (; i + kW <= n; i += kW) {
    V v[kN] = {hn::LoadU(d, ptrs + i)...};
    f(v[I]...);
    (store_back(d, v[I], ptrs + i), ...);
  }
  if (i == n) return;
  const Index rest = n - i;
  alignas(64) T lanes[kN][static_cast<size_t>(kW)] = {};
  const auto gather = [&](size_t k, const T* src) {
    for (Index j = 0; j < rest; ++j) lanes[k][j] = src[i + j];
  };
  (gather(I, ptrs), ...);
  V v[kN] = {hn::Load(d, lanes[I])...};
  f(v[I]...);
  const auto scatter = [&](size_t k, auto* dst) {
    if constexpr (!std::is_const_v<std::remove_pointer_t<decltype(dst)>>) {
      hn::Store(v[k], d, lanes[k]);
      for (Index j = 0; j < rest; ++j) dst[i + j] = lanes[k][j];
    }
  };
  (scatter(I, ptrs), ...);
}

template <class D, class F, class... P>
HWY_INLINE void map(D d, Index n, F&& f, P*... ptrs) {
  map_impl(d, n, f, std::index_sequence_for<P...>{}, ptrs...);
}

// The per-vector arithmetic of torch.optim.Adam (single-tensor path). The division by the
// step's scalar √(1 − β2^t) is a multiply by its reciprocal (rounded once per step): the
// denominator is then within an ulp or so of torch's, and the loop, bound by the divider, ≈ 25%
// faster.
template <class T, AdamDecay kDecay, bool kAmsgrad>
void adam_pass(Index n, T* p, const T* g, T* m, T* v, T* vmax, const AdamScalars<T>& s) {
  const Tag<T> d;
  using V = hn::Vec<decltype(d)>;
  const V decay = hn::Set(d, s.decay), wd = hn::Set(d, s.weight_decay);
  const V lerp = hn::Set(d, s.lerp_w), beta2 = hn::Set(d, s.beta2);
  const V one_minus_beta2 = hn::Set(d, s.one_minus_beta2);
  const V neg_step = hn::Set(d, s.neg_step_size), inv_b2 = hn::Set(d, s.inv_bias2_sqrt);
  const V eps = hn::Set(d, s.eps);
  const auto moments = [&](V& pv, const V& gv, V& mv, V& vv) {
    V gd = gv;
    if constexpr (kDecay == AdamDecay::kDecoupled) pv = hn::Mul(pv, decay);  // param.mul_
    if constexpr (kDecay == AdamDecay::kL2) gd = hn::Add(gv, hn::Mul(wd, pv));
    mv = hn::Add(mv, hn::Mul(lerp, hn::Sub(gd, mv)));  // lerp_
    vv = hn::Add(hn::Mul(vv, beta2), hn::Mul(hn::Mul(one_minus_beta2, gd), gd));
  };
  const auto apply = [&](V& pv, const V& mv, const V& vv) {
    pv = hn::Add(pv, hn::Div(hn::Mul(neg_step, mv), hn::Add(hn::Mul(hn::Sqrt(vv), inv_b2), eps)));
  };
  if constexpr (kAmsgrad) {
    map(
        d, n,
        [&](V& pv, V& gv, V& mv, V& vv, V& wv) {
          moments(pv, gv, mv, vv);
          wv = hn::Max(wv, vv);
          apply(pv, mv, wv);
        },
        p, g, m, v, vmax);
  } else {
    map(
        d, n,
        [&](V& pv, V& gv, V& mv, V& vv) {
          moments(pv, gv, mv, vv);
          apply(pv, mv, vv);
        },
        p, g, m, v);
  }
}

template <class T, AdamDecay kDecay>
void adam_amsgrad(bool amsgrad, Index n, T* p, const T* g, T* m, T* v, T* vmax,
                  const AdamScalars<T>& s) {
  if (amsgrad)
    adam_pass<T, kDecay, true>(n, p, g, m, v, vmax, s);
  else
    adam_pass<T, kDecay, false>(n, p, g, m, v, vmax, s);
}

template <class T>
void adam_any(AdamDecay decay, bool amsgrad, Index n, T* p, const T* g, T* m, T* v, T* vmax,
              const AdamScalars<T>& s) {
  switch (decay) {
    case AdamDecay::kNone:
      return adam_amsgrad<T, AdamDecay::kNone>(amsgrad, n, p, g, m, v, vmax, s);
    case AdamDecay::kL2:
      return adam_amsgrad<T, AdamDecay::kL2>(amsgrad, n, p, g, m, v, vmax, s);
    case AdamDecay::kDecoupled:
      return adam_amsgrad<T, AdamDecay::kDecoupled>(amsgrad, n, p, g, m, v, vmax, s);
  }
}

template <class T, bool kDecay>
void sgd_pass(Index n, T* p, const T* g, T* buf, const SgdScalars<T>& s) {
  const Tag<T> d;
  using V = hn::Vec<decltype(d)>;
  const V neg_lr = hn::Set(d, s.neg_lr), wd = hn::Set(d, s.weight_decay);
  const V momentum = hn::Set(d, s.momentum), one_minus_damp = hn::Set(d, s.one_minus_damp);
  const auto grad = [&](const V& pv, const V& gv) {
    if constexpr (kDecay)
      return hn::Add(gv, hn::Mul(wd, pv));  // grad.add(param, alpha=wd)
    else
      return gv;
  };
  if (buf == nullptr) {
    map(
        d, n, [&](V& pv, V& gv) { pv = hn::Add(pv, hn::Mul(neg_lr, grad(pv, gv))); }, p, g);
    return;
  }
  const auto run = [&](auto first_step, auto nest) {
    map(
        d, n,
        [&](V& pv, V& gv, V& bv) {
          const V gd = grad(pv, gv);
          if constexpr (decltype(first_step)::value)
            bv = gd;  // buf = clone(grad)
          else
            bv = hn::Add(hn::Mul(bv, momentum), hn::Mul(one_minus_damp, gd));
          if constexpr (decltype(nest)::value)
            pv = hn::Add(pv, hn::Mul(neg_lr, hn::Add(gd, hn::Mul(momentum, bv))));
          else
            pv = hn::Add(pv, hn::Mul(neg_lr, bv));
        },
        p, g, buf);
  };
  using Yes = std::true_type;
  using No = std::false_type;
  if (s.first)
    s.nesterov ? run(Yes{}, Yes{}) : run(Yes{}, No{});
  else
    s.nesterov ? run(No{}, Yes{}) : run(No{}, No{});
}

template <class T>
void sgd_any(Index n, T* p, const T* g, T* buf, const SgdScalars<T>& s) {
  if (s.decay)
    sgd_pass<T, true>(n, p, g, buf, s);
  else
    sgd_pass<T, false>(n, p, g, buf, s);
}

template <class T>
void sparse_adam_any(Index n, T* p, const T* g, T* m, T* v, T lerp_w1, T lerp_w2, T neg_step_size,
                     T eps) {
  const Tag<T> d;
  using V = hn::Vec<decltype(d)>;
  const V l1 = hn::Set(d, lerp_w1), l2 = hn::Set(d, lerp_w2);
  const V neg_step = hn::Set(d, neg_step_size), e = hn::Set(d, eps);
  map(
      d, n,
      [&](V& pv, V& gv, V& mv, V& vv) {
        mv = hn::Add(mv, hn::Mul(hn::Sub(gv, mv), l1));
        vv = hn::Add(vv, hn::Mul(hn::Sub(hn::Mul(gv, gv), vv), l2));
        pv = hn::Add(pv, hn::Mul(neg_step, hn::Div(mv, hn::Add(hn::Sqrt(vv), e))));
      },
      p, g, m, v);
}

// Rows ahead whose lines are prefetched: a touched row's value, moments and gradient are
// random lines of tables that outgrow L1 (and, with several trainer threads, often lines
// another core wrote last).
constexpr size_t kRowsAhead = 4;

template <class T, bool kDense>
void sparse_rows_pass(std::span<const int32_t> rows, std::span<const SparseTable<T>> tables,
                      const SparseStep<T>& s) {
  for (size_t k = 0; k < rows.size(); ++k) {
    for (const SparseTable<T>& t : tables) {
      if (s.prefetch && k + kRowsAhead < rows.size()) {
        const Index o = static_cast<Index>(rows[k + kRowsAhead]) * t.width;
        prefetch_span<true>(t.value + o, t.width);
        prefetch_span<true>(t.m + o, t.width);
        prefetch_span<true>(t.v + o, t.width);
        prefetch_span(t.grad(static_cast<Index>(k + kRowsAhead)), t.width);
      }
      const Index o = static_cast<Index>(rows[k]) * t.width;
      const T* g = t.grad(static_cast<Index>(k));
      if constexpr (kDense)
        adam_pass<T, AdamDecay::kNone, false>(t.width, t.value + o, g, t.m + o, t.v + o, nullptr,
                                              s.adam);
      else
        sparse_adam_any<T>(t.width, t.value + o, g, t.m + o, t.v + o, s.sparse.lerp_w1,
                           s.sparse.lerp_w2, s.sparse.neg_step_size, s.sparse.eps);
    }
  }
}

template <class T>
void sparse_rows_any(std::span<const int32_t> rows, std::span<const SparseTable<T>> tables,
                     const SparseStep<T>& s) {
  if (s.dense_eps)
    sparse_rows_pass<T, true>(rows, tables, s);
  else
    sparse_rows_pass<T, false>(rows, tables, s);
}

void sparse_rows_f32(std::span<const int32_t> rows, std::span<const SparseTable<float>> tables,
                     const SparseStep<float>& s) {
  sparse_rows_any<float>(rows, tables, s);
}
void sparse_rows_f64(std::span<const int32_t> rows, std::span<const SparseTable<double>> tables,
                     const SparseStep<double>& s) {
  sparse_rows_any<double>(rows, tables, s);
}

void adam_f32(AdamDecay decay, bool amsgrad, Index n, float* p, const float* g, float* m, float* v,
              float* vmax, const AdamScalars<float>& s) {
  adam_any<float>(decay, amsgrad, n, p, g, m, v, vmax, s);
}
void adam_f64(AdamDecay decay, bool amsgrad, Index n, double* p, const double* g, double* m,
              double* v, double* vmax, const AdamScalars<double>& s) {
  adam_any<double>(decay, amsgrad, n, p, g, m, v, vmax, s);
}
void sgd_f32(Index n, float* p, const float* g, float* buf, const SgdScalars<float>& s) {
  sgd_any<float>(n, p, g, buf, s);
}
void sgd_f64(Index n, double* p, const double* g, double* buf, const SgdScalars<double>& s) {
  sgd_any<double>(n, p, g, buf, s);
}
void sparse_adam_f32(Index n, float* p, const float* g, float* m, float* v, float lerp_w1,
                     float lerp_w2, float neg_step_size, float eps) {
  sparse_adam_any<float>(n, p, g, m, v, lerp_w1, lerp_w2, neg_step_size, eps);
}
void sparse_adam_f64(Index n, double* p, const double* g, double* m, double* v, double lerp_w1,
                     double lerp_w2, double neg_step_size, double eps) {
  sparse_adam_any<double>(n, p, g, m, v, lerp_w1, lerp_w2, neg_step_size, eps);
}

}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace shoal::kernels {

HWY_EXPORT(adam_f32);
HWY_EXPORT(adam_f64);
HWY_EXPORT(sgd_f32);
HWY_EXPORT(sgd_f64);
HWY_EXPORT(sparse_adam_f32);
HWY_EXPORT(sparse_adam_f64);
HWY_EXPORT(sparse_rows_f32);
HWY_EXPORT(sparse_rows_f64);

template <class T>
void sparse_rows_update(std::span<const int32_t> rows, std::span<const SparseTable<T>> tables,
                        const SparseStep<T>& s) {
  if constexpr (std::is_same_v<T, float>)
    SHOAL_DISPATCH(sparse_rows_f32)(rows, tables, s);
  else
    SHOAL_DISPATCH(sparse_rows_f64)(rows, tables, s);
}

template <class T>
void adam_update(AdamDecay decay, bool amsgrad, Index n, T* p, const T* g, T* m, T* v, T* vmax,
                 const AdamScalars<T>& s) {
  if constexpr (std::is_same_v<T, float>)
    SHOAL_DISPATCH(adam_f32)(decay, amsgrad, n, p, g, m, v, vmax, s);
  else
    SHOAL_DISPATCH(adam_f64)(decay, amsgrad, n, p, g, m, v, vmax, s);
}

template <class T>
void sgd_update(Index n, T* p, const T* g, T* buf, const SgdScalars<T>& s) {
  if constexpr (std::is_same_v<T, float>)
    SHOAL_DISPATCH(sgd_f32)(n, p, g, buf, s);
  else
    SHOAL_DISPATCH(sgd_f64)(n, p, g, buf, s);
}

template <class T>
void sparse_adam_update(Index n, T* p, const T* g, T* m, T* v, T lerp_w1, T lerp_w2,
                        T neg_step_size, T eps) {
  if constexpr (std::is_same_v<T, float>)
    SHOAL_DISPATCH(sparse_adam_f32)(n, p, g, m, v, lerp_w1, lerp_w2, neg_step_size, eps);
  else
    SHOAL_DISPATCH(sparse_adam_f64)(n, p, g, m, v, lerp_w1, lerp_w2, neg_step_size, eps);
}

#define SHOAL_INSTANTIATE(T)                                                                     \
  template void adam_update<T>(AdamDecay, bool, Index, T*, const T*, T*, T*, T*,                 \
                               const AdamScalars<T>&);                                           \
  template void sgd_update<T>(Index, T*, const T*, T*, const SgdScalars<T>&);                    \
  template void sparse_adam_update<T>(Index, T*, const T*, T*, T*, T, T, T, T);                  \
  template void sparse_rows_update<T>(std::span<const int32_t>, std::span<const SparseTable<T>>, \
                                      const SparseStep<T>&);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::kernels
#endif  // HWY_ONCE
