// Fast recurrent layers (kernels/recurrent.h): the sequence loop of recurrent_seq.h over the
// project's GEMM, and the gate math of one step written with Highway vectors, compiled once per
// SIMD target and chosen at run time. σ and tanh come from Highway's contrib math (exp within 1
// ulp, tanh within 4), so the gates differ from the reference's libm ones by a few ulp; the
// columns a row leaves past its last full vector run recurrent_cell.h's scalar code.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/recurrent.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h

// Per target too, after highway.h (its include guard toggles per target).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <hwy/contrib/math/math-inl.h>
#pragma GCC diagnostic pop

#include <type_traits>

#include "dispatch.h"
#include "recurrent_cell.h"
#include "recurrent_seq.h"

HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// σ(x) = 1 / (1 + e^−x), the exponent capped where e^−x would leave Exp's valid range (σ is 0
// to the type's precision there).
template <class D, class V>
HWY_INLINE V Sigmoid(D d, V x) {
  using T = hn::TFromD<D>;
  const V cap = hn::Set(d, std::is_same_v<T, float> ? T(80) : T(700));
  const V one = hn::Set(d, T(1));
  return hn::Div(one, hn::Add(one, hn::Exp(d, hn::Min(hn::Neg(x), cap))));
}

template <class T>
void lstm_step_t(Index b, Index hd, T* g, const T* cp, T* c, T* h) {
  const hn::ScalableTag<T> d;
  const Index n = static_cast<Index>(hn::Lanes(d));
  for (Index r = 0; r < b; ++r) {
    T* gr = g + r * 4 * hd;
    const T* cpr = cp + r * hd;
    T* cr = c + r * hd;
    T* hr = h + r * hd;
    Index j = 0;
    for (; j + n <= hd; j += n) {
      const auto i = Sigmoid(d, hn::LoadU(d, gr + j));
      const auto f = Sigmoid(d, hn::LoadU(d, gr + hd + j));
      const auto gg = hn::Tanh(d, hn::LoadU(d, gr + 2 * hd + j));
      const auto o = Sigmoid(d, hn::LoadU(d, gr + 3 * hd + j));
      hn::StoreU(i, d, gr + j);
      hn::StoreU(f, d, gr + hd + j);
      hn::StoreU(gg, d, gr + 2 * hd + j);
      hn::StoreU(o, d, gr + 3 * hd + j);
      const auto cn = hn::Add(hn::Mul(f, hn::LoadU(d, cpr + j)), hn::Mul(i, gg));
      hn::StoreU(cn, d, cr + j);
      hn::StoreU(hn::Mul(o, hn::Tanh(d, cn)), d, hr + j);
    }
    cell::lstm_forward(hd, j, gr, cpr, cr, hr);
  }
}

template <class T>
void lstm_step_back_t(Index b, Index hd, const T* g, const T* cp, const T* c, const T* dh, T* dc,
                      T* dg) {
  const hn::ScalableTag<T> d;
  const Index n = static_cast<Index>(hn::Lanes(d));
  const auto one = hn::Set(d, T(1));
  for (Index r = 0; r < b; ++r) {
    const T* gr = g + r * 4 * hd;
    T* dgr = dg + r * 4 * hd;
    const Index o = r * hd;
    Index j = 0;
    for (; j + n <= hd; j += n) {
      const auto i = hn::LoadU(d, gr + j), f = hn::LoadU(d, gr + hd + j),
                 gg = hn::LoadU(d, gr + 2 * hd + j), og = hn::LoadU(d, gr + 3 * hd + j);
      const auto tc = hn::Tanh(d, hn::LoadU(d, c + o + j));
      const auto dhv = hn::LoadU(d, dh + o + j);
      const auto dct = hn::Add(hn::LoadU(d, dc + o + j),
                               hn::Mul(hn::Mul(dhv, og), hn::Sub(one, hn::Mul(tc, tc))));
      hn::StoreU(hn::Mul(hn::Mul(hn::Mul(dct, gg), i), hn::Sub(one, i)), d, dgr + j);
      hn::StoreU(hn::Mul(hn::Mul(hn::Mul(dct, hn::LoadU(d, cp + o + j)), f), hn::Sub(one, f)), d,
                 dgr + hd + j);
      hn::StoreU(hn::Mul(hn::Mul(dct, i), hn::Sub(one, hn::Mul(gg, gg))), d, dgr + 2 * hd + j);
      hn::StoreU(hn::Mul(hn::Mul(hn::Mul(dhv, tc), og), hn::Sub(one, og)), d, dgr + 3 * hd + j);
      hn::StoreU(hn::Mul(dct, f), d, dc + o + j);
    }
    cell::lstm_backward(hd, j, gr, cp + o, c + o, dh + o, dc + o, dgr);
  }
}

template <class T>
void gru_step_t(Index b, Index hd, T* g, const T* gh, const T* hp, T* hn_out, T* h) {
  const hn::ScalableTag<T> d;
  const Index n = static_cast<Index>(hn::Lanes(d));
  const auto one = hn::Set(d, T(1));
  for (Index r = 0; r < b; ++r) {
    T* gr = g + r * 3 * hd;
    const T* ghr = gh + r * 3 * hd;
    const Index o = r * hd;
    Index j = 0;
    for (; j + n <= hd; j += n) {
      const auto rg = Sigmoid(d, hn::Add(hn::LoadU(d, gr + j), hn::LoadU(d, ghr + j)));
      const auto z = Sigmoid(d, hn::Add(hn::LoadU(d, gr + hd + j), hn::LoadU(d, ghr + hd + j)));
      const auto ghn = hn::LoadU(d, ghr + 2 * hd + j);
      const auto nv = hn::Tanh(d, hn::Add(hn::LoadU(d, gr + 2 * hd + j), hn::Mul(rg, ghn)));
      hn::StoreU(rg, d, gr + j);
      hn::StoreU(z, d, gr + hd + j);
      hn::StoreU(nv, d, gr + 2 * hd + j);
      hn::StoreU(ghn, d, hn_out + o + j);
      hn::StoreU(hn::Add(hn::Mul(hn::Sub(one, z), nv), hn::Mul(z, hn::LoadU(d, hp + o + j))), d,
                 h + o + j);
    }
    cell::gru_forward(hd, j, gr, ghr, hp + o, hn_out + o, h + o);
  }
}

template <class T>
void gru_step_back_t(Index b, Index hd, const T* g, const T* hnv, const T* hp, const T* dh, T* dgi,
                     T* dgh, T* dhp) {
  const hn::ScalableTag<T> d;
  const Index n = static_cast<Index>(hn::Lanes(d));
  const auto one = hn::Set(d, T(1));
  for (Index r = 0; r < b; ++r) {
    const T* gr = g + r * 3 * hd;
    T* dir = dgi + r * 3 * hd;
    T* dhr = dgh + r * 3 * hd;
    const Index o = r * hd;
    Index j = 0;
    for (; j + n <= hd; j += n) {
      const auto rg = hn::LoadU(d, gr + j), z = hn::LoadU(d, gr + hd + j),
                 nv = hn::LoadU(d, gr + 2 * hd + j), dhv = hn::LoadU(d, dh + o + j);
      const auto dan = hn::Mul(hn::Mul(dhv, hn::Sub(one, z)), hn::Sub(one, hn::Mul(nv, nv)));
      const auto dar =
          hn::Mul(hn::Mul(hn::Mul(dan, hn::LoadU(d, hnv + o + j)), rg), hn::Sub(one, rg));
      const auto daz =
          hn::Mul(hn::Mul(hn::Mul(dhv, hn::Sub(hn::LoadU(d, hp + o + j), nv)), z), hn::Sub(one, z));
      hn::StoreU(dar, d, dir + j);
      hn::StoreU(daz, d, dir + hd + j);
      hn::StoreU(dan, d, dir + 2 * hd + j);
      hn::StoreU(dar, d, dhr + j);
      hn::StoreU(daz, d, dhr + hd + j);
      hn::StoreU(hn::Mul(dan, rg), d, dhr + 2 * hd + j);
      hn::StoreU(hn::Mul(dhv, z), d, dhp + o + j);
    }
    cell::gru_backward(hd, j, gr, hnv + o, hp + o, dh + o, dir, dhr, dhp + o);
  }
}

template <class T>
void tanh_step_t(Index count, T* a) {
  const hn::ScalableTag<T> d;
  const Index n = static_cast<Index>(hn::Lanes(d));
  Index j = 0;
  for (; j + n <= count; j += n) hn::StoreU(hn::Tanh(d, hn::LoadU(d, a + j)), d, a + j);
  cell::tanh_forward(count, j, a);
}

template <class T>
void tanh_step_back_t(Index count, const T* h, const T* dh, T* da) {
  for (Index j = 0; j < count; ++j) da[j] = dh[j] * (T(1) - h[j] * h[j]);
}

// One exported function per kernel and type (Highway exports plain functions, not templates).
#define SHOAL_PER_TYPE(T, S)                                                                   \
  void lstm_step_##S(Index b, Index hd, T* g, const T* cp, T* c, T* h) {                       \
    lstm_step_t<T>(b, hd, g, cp, c, h);                                                        \
  }                                                                                            \
  void lstm_step_back_##S(Index b, Index hd, const T* g, const T* cp, const T* c, const T* dh, \
                          T* dc, T* dg) {                                                      \
    lstm_step_back_t<T>(b, hd, g, cp, c, dh, dc, dg);                                          \
  }                                                                                            \
  void gru_step_##S(Index b, Index hd, T* g, const T* gh, const T* hp, T* hn, T* h) {          \
    gru_step_t<T>(b, hd, g, gh, hp, hn, h);                                                    \
  }                                                                                            \
  void gru_step_back_##S(Index b, Index hd, const T* g, const T* hn, const T* hp, const T* dh, \
                         T* dgi, T* dgh, T* dhp) {                                             \
    gru_step_back_t<T>(b, hd, g, hn, hp, dh, dgi, dgh, dhp);                                   \
  }                                                                                            \
  void tanh_step_##S(Index n, T* a) {                                                          \
    tanh_step_t<T>(n, a);                                                                      \
  }                                                                                            \
  void tanh_step_back_##S(Index n, const T* h, const T* dh, T* da) {                           \
    tanh_step_back_t<T>(n, h, dh, da);                                                         \
  }
SHOAL_PER_TYPE(float, f32)
SHOAL_PER_TYPE(double, f64)
#undef SHOAL_PER_TYPE

}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace shoal::kernels {

SHOAL_EXPORT_BOTH(lstm_step)
SHOAL_EXPORT_BOTH(lstm_step_back)
SHOAL_EXPORT_BOTH(gru_step)
SHOAL_EXPORT_BOTH(gru_step_back)
SHOAL_EXPORT_BOTH(tanh_step)
SHOAL_EXPORT_BOTH(tanh_step_back)
#undef SHOAL_EXPORT_BOTH

// The float or double table entry of a kernel.
namespace {

// Narrow weight gradients: a BLAS packs all of A first, which is the whole sequence's gate
// gradients ([T·B, G·Hd], megabytes), though it then meets only n ≤ 4 columns of B (an LSTM
// projection's P = 1 state, a univariate window's few input features).
constexpr Index kNarrowColumns = 4;

template <class T>
struct FastOps {
  static void gemm(Trans ta, Trans tb, Index m, Index n, Index k, T alpha, const T* a, Index lda,
                   const T* b, Index ldb, T beta, T* c, Index ldc) {
    if (ta == Trans::kYes && tb == Trans::kNo && n <= kNarrowColumns && alpha == T(1) &&
        beta == T(1)) {
      // C [m, n] += Aᵀ·B as one pass over A's rows: C's column j gains row r of A times
      // B[r, j] (row by row, so each element of C sums in row order).
      for (Index r = 0; r < k; ++r)
        for (Index j = 0; j < n; ++j) {
          const T w = b[r * ldb + j];
          const T* ar = a + r * lda;
          T* cj = c + j;
          for (Index i = 0; i < m; ++i) cj[i * ldc] += ar[i] * w;
        }
      return;
    }
    kernels::gemm<T>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  // A step's recurrent product [B, K]·[K, N] (K·N = G·Hd² weight values): libxsmm streams the
  // rows past the weight as it lies, where the BLAS path kAuto picks above 2¹⁶ weight values
  // would pack it again at every step.
  static void step_gemm(Index m, Index n, Index k, T alpha, const T* a, Index lda, const T* b,
                        Index ldb, T beta, T* c, Index ldc) {
    kernels::gemm<T>(GemmBackend::kXsmm, Trans::kNo, Trans::kNo, m, n, k, alpha, a, lda, b, ldb,
                     beta, c, ldc);
  }
  static void lstm_step(Index b, Index hd, T* g, const T* cp, T* c, T* h) {
    SHOAL_BY_TYPE(lstm_step, b, hd, g, cp, c, h);
  }
  static void lstm_step_back(Index b, Index hd, const T* g, const T* cp, const T* c, const T* dh,
                             T* dc, T* dg) {
    SHOAL_BY_TYPE(lstm_step_back, b, hd, g, cp, c, dh, dc, dg);
  }
  static void gru_step(Index b, Index hd, T* g, const T* gh, const T* hp, T* hn, T* h) {
    SHOAL_BY_TYPE(gru_step, b, hd, g, gh, hp, hn, h);
  }
  static void gru_step_back(Index b, Index hd, const T* g, const T* hn, const T* hp, const T* dh,
                            T* dgi, T* dgh, T* dhp) {
    SHOAL_BY_TYPE(gru_step_back, b, hd, g, hn, hp, dh, dgi, dgh, dhp);
  }
  static void tanh_step(Index n, T* a) { SHOAL_BY_TYPE(tanh_step, n, a); }
  static void tanh_step_back(Index n, const T* h, const T* dh, T* da) {
    SHOAL_BY_TYPE(tanh_step_back, n, h, dh, da);
  }
};

}  // namespace

Index rnn_forward_scratch(RnnCell cell, Index steps, Index batch, Index hidden) {
  static_cast<void>(steps);
  return detail::rnn_forward_scratch_of(cell, batch, hidden);
}

Index rnn_backward_scratch(RnnCell cell, Index steps, Index batch, Index hidden) {
  return detail::rnn_backward_scratch_of(cell, steps, batch, hidden);
}

template <class T>
void lstm_step_forward(Index b, Index hd, T* gates, const T* c_prev, T* c, T* h) {
  FastOps<T>::lstm_step(b, hd, gates, c_prev, c, h);
}

template <class T>
void rnn_forward(const RnnLayer<T>& layer, const T* x, T* h, const RnnSaved<T>& saved, T* scratch) {
  detail::rnn_forward_seq<T, FastOps<T>>(layer, x, h, saved, scratch);
}

template <class T>
void rnn_backward(const RnnLayer<T>& layer, const T* x, const T* h, const RnnSaved<T>& saved,
                  const T* dh, T* dx, const RnnGrads<T>& grads, T* scratch) {
  detail::rnn_backward_seq<T, FastOps<T>>(layer, x, h, saved, dh, dx, grads, scratch);
}

#define SHOAL_INSTANTIATE(T)                                                                \
  template void lstm_step_forward<T>(Index, Index, T*, const T*, T*, T*);                   \
  template void rnn_forward<T>(const RnnLayer<T>&, const T*, T*, const RnnSaved<T>&, T*);   \
  template void rnn_backward<T>(const RnnLayer<T>&, const T*, const T*, const RnnSaved<T>&, \
                                const T*, T*, const RnnGrads<T>&, T*);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::kernels
#endif  // HWY_ONCE
