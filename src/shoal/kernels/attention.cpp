// Scaled dot-product attention (attention.h): per (batch, head) pair, the scores' GEMM, one pass
// of the row softmax and the weighted sum's GEMM. The softmax rows are Highway vectors for
// float (every SIMD target, Highway's Exp within 1 ulp of libm's, a row's last partial vector
// through a small copy) and plain loops for double.
// The scale is applied inside the softmax (exp(scale·(s − max))) and folded into dS, so every
// product runs with alpha = 1, which libxsmm's kernels take.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/attention.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h

// Per target too, after highway.h (its include guard toggles per target).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <hwy/contrib/math/math-inl.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "dispatch.h"
#include "shoal/kernels/attention.h"
#include "shoal/kernels/gemm.h"

HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Row i of s [rows, lk] (raw scores Q·Kᵀ) becomes softmax(scale · s[i, :visible]) followed by
// zeros; visible = min(lk, i + shift + 1) when causal (shift = lk − lq), else lk.
void softmax_rows_f32(Index rows, Index lk, Index shift, bool causal, float scale, float* s) {
  const hn::ScalableTag<float> d;
  const Index n = static_cast<Index>(hn::Lanes(d));
  for (Index i = 0; i < rows; ++i) {
    float* r = s + i * lk;
    const Index nv = causal ? std::clamp<Index>(i + shift + 1, 0, lk) : lk;
    if (nv == 0) {
      std::fill(r, r + lk, 0.0f);
      continue;
    }
    auto top = hn::Set(d, -std::numeric_limits<float>::infinity());
    Index j = 0;
    for (; j + n <= nv; j += n) top = hn::Max(top, hn::LoadU(d, r + j));
    float mx = hn::GetLane(hn::MaxOfLanes(d, top));
    for (; j < nv; ++j) mx = std::max(mx, r[j]);
    const auto vmx = hn::Set(d, mx), vscale = hn::Set(d, scale);
    auto acc = hn::Zero(d);
    j = 0;
    for (; j + n <= nv; j += n) {
      const auto e = hn::Exp(d, hn::Mul(vscale, hn::Sub(hn::LoadU(d, r + j), vmx)));
      hn::StoreU(e, d, r + j);
      acc = hn::Add(acc, e);
    }
    if (j < nv) {  // the tail, through a vector-sized copy (short rows are all tail)
      HWY_ALIGN float tail[hn::MaxLanes(d)];
      const auto left = static_cast<size_t>(nv - j);
      std::copy_n(r + j, left, tail);
      std::fill(tail + left, tail + hn::MaxLanes(d), mx);
      const auto e = hn::IfThenElseZero(
          hn::FirstN(d, left), hn::Exp(d, hn::Mul(vscale, hn::Sub(hn::Load(d, tail), vmx))));
      hn::Store(e, d, tail);
      std::copy_n(tail, left, r + j);
      acc = hn::Add(acc, e);
    }
    const float sum = hn::GetLane(hn::SumOfLanes(d, acc));
    const float inv = 1.0f / sum;
    const auto vinv = hn::Set(d, inv);
    j = 0;
    for (; j + n <= nv; j += n) hn::StoreU(hn::Mul(hn::LoadU(d, r + j), vinv), d, r + j);
    for (; j < nv; ++j) r[j] *= inv;
    std::fill(r + nv, r + lk, 0.0f);
  }
}

// ds [rows, lk] holds dP; becomes scale · P ⊙ (dP − rowsum(dP ⊙ P)).
void softmax_back_rows_f32(Index rows, Index lk, float scale, const float* p, float* ds) {
  const hn::ScalableTag<float> d;
  const Index n = static_cast<Index>(hn::Lanes(d));
  for (Index i = 0; i < rows; ++i) {
    const float* pr = p + i * lk;
    float* g = ds + i * lk;
    auto acc = hn::Zero(d);
    Index j = 0;
    for (; j + n <= lk; j += n) acc = hn::MulAdd(hn::LoadU(d, g + j), hn::LoadU(d, pr + j), acc);
    float dot = hn::GetLane(hn::SumOfLanes(d, acc));
    for (; j < lk; ++j) dot += g[j] * pr[j];
    const auto vdot = hn::Set(d, dot), vscale = hn::Set(d, scale);
    j = 0;
    for (; j + n <= lk; j += n)
      hn::StoreU(hn::Mul(vscale, hn::Mul(hn::LoadU(d, pr + j), hn::Sub(hn::LoadU(d, g + j), vdot))),
                 d, g + j);
    for (; j < lk; ++j) g[j] = scale * (pr[j] * (g[j] - dot));
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace shoal::kernels {

HWY_EXPORT(softmax_rows_f32);
HWY_EXPORT(softmax_back_rows_f32);

namespace {

template <class T>
void softmax_rows(Index rows, Index lk, Index shift, bool causal, T scale, T* s) {
  if constexpr (std::is_same_v<T, float>) {
    SHOAL_DISPATCH(softmax_rows_f32)(rows, lk, shift, causal, scale, s);
  } else {
    for (Index i = 0; i < rows; ++i) {
      T* r = s + i * lk;
      const Index nv = causal ? std::clamp<Index>(i + shift + 1, 0, lk) : lk;
      T mx = -std::numeric_limits<T>::infinity(), sum = 0;
      for (Index j = 0; j < nv; ++j) mx = std::max(mx, r[j]);
      for (Index j = 0; j < nv; ++j) sum += (r[j] = std::exp(scale * (r[j] - mx)));
      for (Index j = 0; j < nv; ++j) r[j] /= sum;
      std::fill(r + nv, r + lk, T(0));
    }
  }
}

template <class T>
void softmax_back_rows(Index rows, Index lk, T scale, const T* p, T* ds) {
  if constexpr (std::is_same_v<T, float>) {
    SHOAL_DISPATCH(softmax_back_rows_f32)(rows, lk, scale, p, ds);
  } else {
    for (Index i = 0; i < rows; ++i) {
      T dot = 0;
      for (Index j = 0; j < lk; ++j) dot += ds[i * lk + j] * p[i * lk + j];
      for (Index j = 0; j < lk; ++j)
        ds[i * lk + j] = scale * (p[i * lk + j] * (ds[i * lk + j] - dot));
    }
  }
}

// P ⊙ M into out (n elements).
template <class T>
void masked(const T* p, const T* m, Index n, T* out) {
  for (Index i = 0; i < n; ++i) out[i] = p[i] * m[i];
}

}  // namespace

size_t attention_scratch(const AttentionShape& s) {
  return size_t(2 * s.lq * s.lk);
}

double attention_flops(const AttentionShape& s, bool backward) {
  const double pairs = double(s.batch * s.heads), scores = double(s.lq * s.lk);
  const double forward = 2.0 * scores * double(s.d + s.dv);
  return pairs * (backward ? 2.0 * forward : forward);
}

template <class T>
void attention_forward(const AttentionShape& s, AttentionInput<T> q, AttentionInput<T> k,
                       AttentionInput<T> v, AttentionOperand<T> out, T* probs, const T* drop,
                       T* scratch, AttentionResidual<T> res) {
  const Index pair = s.lq * s.lk;
  for (Index b = 0; b < s.batch; ++b)
    for (Index h = 0; h < s.heads; ++h) {
      const Index at = (b * s.heads + h) * pair;
      T* p = probs + at;
      gemm<T>(Trans::kNo, Trans::kYes, s.lq, s.lk, s.d, T(1), q.at(b, h), q.ld, k.at(b, h), k.ld,
              T(0), p, s.lk);
      if (res.on) {
        // The scale multiplies the product before the prior is added (neuralforecast's order,
        // so the scores round as its do); the softmax then runs unscaled.
        T* sc = res.scores + at;
        const T scale = T(s.scale);
        if (res.prior != nullptr) {
          const T* pr = res.prior + at;
          for (Index i = 0; i < pair; ++i) sc[i] = p[i] = scale * p[i] + pr[i];
        } else {
          for (Index i = 0; i < pair; ++i) sc[i] = p[i] = scale * p[i];
        }
        softmax_rows<T>(s.lq, s.lk, s.lk - s.lq, s.causal, T(1), p);
      } else {
        softmax_rows<T>(s.lq, s.lk, s.lk - s.lq, s.causal, T(s.scale), p);
      }
      const T* weights = p;
      if (drop != nullptr) {
        masked(p, drop + at, pair, scratch);
        weights = scratch;
      }
      gemm<T>(Trans::kNo, Trans::kNo, s.lq, s.dv, s.lk, T(1), weights, s.lk, v.at(b, h), v.ld, T(0),
              out.at(b, h), out.ld);
    }
}

template <class T>
void attention_backward(const AttentionShape& s, AttentionInput<T> q, AttentionInput<T> k,
                        AttentionInput<T> v, const T* probs, const T* drop, AttentionInput<T> dout,
                        AttentionOperand<T> dq, AttentionOperand<T> dk, AttentionOperand<T> dv,
                        T* scratch, AttentionResidualGrad<T> res) {
  const Index pair = s.lq * s.lk;
  T* ds = scratch;
  T* weights_buf = scratch + pair;
  for (Index b = 0; b < s.batch; ++b)
    for (Index h = 0; h < s.heads; ++h) {
      const Index at = (b * s.heads + h) * pair;
      const T* p = probs + at;
      const T* weights = p;
      if (drop != nullptr) {
        masked(p, drop + at, pair, weights_buf);
        weights = weights_buf;
      }
      const T* go = dout.at(b, h);
      gemm<T>(Trans::kYes, Trans::kNo, s.lk, s.dv, s.lq, T(1), weights, s.lk, go, dout.ld, T(0),
              dv.at(b, h), dv.ld);
      gemm<T>(Trans::kNo, Trans::kYes, s.lq, s.lk, s.dv, T(1), go, dout.ld, v.at(b, h), v.ld, T(0),
              ds, s.lk);
      if (drop != nullptr) masked(ds, drop + at, pair, ds);
      if (res.on) {  // dS in full (the next layer's part added) before the scale
        softmax_back_rows<T>(s.lq, s.lk, T(1), p, ds);
        if (res.dscores != nullptr)
          for (Index i = 0; i < pair; ++i) ds[i] += res.dscores[at + i];
        if (res.dprior != nullptr) std::copy_n(ds, pair, res.dprior + at);
        const T scale = T(s.scale);
        for (Index i = 0; i < pair; ++i) ds[i] *= scale;
      } else {
        softmax_back_rows<T>(s.lq, s.lk, T(s.scale), p, ds);
      }
      gemm<T>(Trans::kNo, Trans::kNo, s.lq, s.d, s.lk, T(1), ds, s.lk, k.at(b, h), k.ld, T(0),
              dq.at(b, h), dq.ld);
      gemm<T>(Trans::kYes, Trans::kNo, s.lk, s.d, s.lq, T(1), ds, s.lk, q.at(b, h), q.ld, T(0),
              dk.at(b, h), dk.ld);
    }
}

#define SHOAL_INSTANTIATE(T)                                                                       \
  template void attention_forward<T>(const AttentionShape&, AttentionInput<T>, AttentionInput<T>,  \
                                     AttentionInput<T>, AttentionOperand<T>, T*, const T*, T*,     \
                                     AttentionResidual<T>);                                        \
  template void attention_backward<T>(const AttentionShape&, AttentionInput<T>, AttentionInput<T>, \
                                      AttentionInput<T>, const T*, const T*, AttentionInput<T>,    \
                                      AttentionOperand<T>, AttentionOperand<T>,                    \
                                      AttentionOperand<T>, T*, AttentionResidualGrad<T>);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::kernels
#endif  // HWY_ONCE
