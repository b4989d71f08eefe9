// Fast causal convolution (kernels/causal_conv.h): one GEMM per tap on the rows it reaches, and
// the bias and activation (forward) or the activation's derivative and the bias gradient
// (backward) as one Highway pass over the output, compiled per SIMD target and chosen at run
// time. tanh comes from Highway's contrib math (within 4 ulp of libm's); the columns a row
// leaves past its last full vector run scalar code.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/causal_conv.cpp"
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
#include <type_traits>

#include "dispatch.h"
#include "shoal/kernels/causal_conv.h"
#include "shoal/kernels/gemm.h"

HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// y[r, :] = act(y[r, :] + b) for rows r < rows (b null: no bias). act: ConvAct as an int.
template <class T>
void bias_act_t(Index rows, Index cols, const T* b, int act, T* y) {
  const hn::ScalableTag<T> d;
  const Index n = static_cast<Index>(hn::Lanes(d));
  const auto zero = hn::Zero(d);
  const auto a = static_cast<ConvAct>(act);
  for (Index r = 0; r < rows; ++r) {
    T* yr = y + r * cols;
    Index j = 0;
    for (; j + n <= cols; j += n) {
      auto v = hn::LoadU(d, yr + j);
      if (b) v = hn::Add(v, hn::LoadU(d, b + j));
      if (a == ConvAct::kRelu) v = hn::Max(v, zero);
      if (a == ConvAct::kTanh) v = hn::Tanh(d, v);
      hn::StoreU(v, d, yr + j);
    }
    for (; j < cols; ++j) {
      T v = yr[j] + (b ? b[j] : T(0));
      if (a == ConvAct::kRelu) v = v > T(0) ? v : T(0);
      if (a == ConvAct::kTanh) v = std::tanh(v);
      yr[j] = v;
    }
  }
}

// dy[r, :] *= act'(y[r, :]) (from the output); db += Σ_r dy[r, :] when db is not null.
template <class T>
void act_back_bias_t(Index rows, Index cols, const T* y, int act, T* dy, T* db) {
  const hn::ScalableTag<T> d;
  const Index n = static_cast<Index>(hn::Lanes(d));
  const auto zero = hn::Zero(d);
  const auto one = hn::Set(d, T(1));
  const auto a = static_cast<ConvAct>(act);
  for (Index r = 0; r < rows; ++r) {
    const T* yr = y + r * cols;
    T* gr = dy + r * cols;
    Index j = 0;
    for (; j + n <= cols; j += n) {
      auto g = hn::LoadU(d, gr + j);
      const auto v = hn::LoadU(d, yr + j);
      if (a == ConvAct::kRelu) g = hn::IfThenElseZero(hn::Gt(v, zero), g);
      if (a == ConvAct::kTanh) g = hn::Mul(g, hn::NegMulAdd(v, v, one));
      hn::StoreU(g, d, gr + j);
      if (db) hn::StoreU(hn::Add(hn::LoadU(d, db + j), g), d, db + j);
    }
    for (; j < cols; ++j) {
      T g = gr[j];
      if (a == ConvAct::kRelu) g = yr[j] > T(0) ? g : T(0);
      if (a == ConvAct::kTanh) g *= T(1) - yr[j] * yr[j];
      gr[j] = g;
      if (db) db[j] += g;
    }
  }
}

// One exported function per kernel and type (Highway exports plain functions, not templates).
#define SHOAL_PER_TYPE(T, S)                                                          \
  void conv_bias_act_##S(Index rows, Index cols, const T* b, int act, T* y) {         \
    bias_act_t<T>(rows, cols, b, act, y);                                             \
  }                                                                                   \
  void conv_act_back_##S(Index rows, Index cols, const T* y, int act, T* dy, T* db) { \
    act_back_bias_t<T>(rows, cols, y, act, dy, db);                                   \
  }
SHOAL_PER_TYPE(float, f32)
SHOAL_PER_TYPE(double, f64)
#undef SHOAL_PER_TYPE

}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace shoal::kernels {

SHOAL_EXPORT_BOTH(conv_bias_act)
SHOAL_EXPORT_BOTH(conv_act_back)

namespace {

template <class T>
void bias_act(Index rows, Index cols, const T* b, ConvAct act, T* y) {
  SHOAL_BY_TYPE(conv_bias_act, rows, cols, b, int(act), y);
}

template <class T>
void act_back(Index rows, Index cols, const T* y, ConvAct act, T* dy, T* db) {
  SHOAL_BY_TYPE(conv_act_back, rows, cols, y, int(act), dy, db);
}

// W_k = W[:, :, k] as [O, I], tap after tap: K·O·I values.
template <class T>
void pack_taps(const CausalConv<T>& c, T* packed) {
  const Index I = c.in, O = c.out, K = c.kernel;
  for (Index o = 0; o < O; ++o)
    for (Index i = 0; i < I; ++i)
      for (Index k = 0; k < K; ++k) packed[(k * O + o) * I + i] = c.w[(o * I + i) * K + k];
}

// Tap k's rows: it reaches `rows` output rows from `y_off` on, reading the input rows from
// `x_off` on (a shift of s_k steps: causal, the output s_k·B rows on; anti-causal, the input).
struct TapRows {
  Index rows, y_off, x_off;
};
template <class T>
TapRows tap_rows(const CausalConv<T>& c, Index k) {
  const bool causal = c.dir == ConvDir::kCausal;
  const Index shift = (causal ? c.kernel - 1 - k : k) * c.dilation * c.batch;
  return {c.steps * c.batch - shift, causal ? shift : 0, causal ? 0 : shift};
}

}  // namespace

Index causal_conv_scratch(Index in, Index out, Index kernel) {
  return (kernel + 1) * out * in;
}

template <class T>
void causal_conv_forward(const CausalConv<T>& c, const T* x, T* y, T* scratch) {
  const Index B = c.batch, I = c.in, O = c.out, K = c.kernel, R = c.steps * B;
  T* taps = scratch;
  pack_taps(c, taps);
  // The unshifted tap (k = K − 1 causal, k = 0 anti-causal) covers every row and writes y; the
  // others add to the rows their shift reaches (none when the shift is the whole window).
  const Index k0 = c.dir == ConvDir::kCausal ? K - 1 : 0;
  gemm<T>(Trans::kNo, Trans::kYes, R, O, I, T(1), x, I, taps + k0 * O * I, I, T(0), y, O);
  for (Index k = 0; k < K; ++k) {
    const TapRows t = tap_rows(c, k);
    if (k == k0 || t.rows <= 0) continue;
    gemm<T>(Trans::kNo, Trans::kYes, t.rows, O, I, T(1), x + t.x_off * I, I, taps + k * O * I, I,
            T(1), y + t.y_off * O, O);
  }
  bias_act<T>(R, O, c.b, c.act, y);
}

template <class T>
void causal_conv_backward(const CausalConv<T>& c, const T* x, const T* y, T* dy, T* dx, T* dw,
                          T* db, T* scratch) {
  const Index I = c.in, O = c.out, K = c.kernel, R = c.steps * c.batch;
  T* taps = scratch;
  T* dwk = scratch + K * O * I;
  act_back<T>(R, O, y, c.act, dy, db);
  if (dx) pack_taps(c, taps);
  // The unshifted tap first: it writes every row of dx, the others add to theirs.
  const Index k0 = c.dir == ConvDir::kCausal ? K - 1 : 0;
  for (Index j = 0; j < K; ++j) {
    const Index k = c.dir == ConvDir::kCausal ? K - 1 - j : j;
    const TapRows t = tap_rows(c, k);
    if (t.rows <= 0) continue;
    const T* g = dy + t.y_off * O;
    const T* xs = x + t.x_off * I;
    // dW_k [O, I] = g_kᵀ · x over the rows the tap reached, then into W's [O, I, K] layout.
    gemm<T>(Trans::kYes, Trans::kNo, O, I, t.rows, T(1), g, O, xs, I, T(0), dwk, I);
    for (Index o = 0; o < O; ++o)
      for (Index i = 0; i < I; ++i) dw[(o * I + i) * K + k] += dwk[o * I + i];
    // dx[x_off ..] (+)= g_k · W_k.
    if (dx)
      gemm<T>(Trans::kNo, Trans::kNo, t.rows, I, O, T(1), g, O, taps + k * O * I, I,
              k == k0 ? T(0) : T(1), dx + t.x_off * I, I);
  }
}

#define SHOAL_INSTANTIATE(T)                                                                      \
  template void causal_conv_forward<T>(const CausalConv<T>&, const T*, T*, T*);                   \
  template void causal_conv_backward<T>(const CausalConv<T>&, const T*, const T*, T*, T*, T*, T*, \
                                        T*);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::kernels
#endif  // HWY_ONCE
