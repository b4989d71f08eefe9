// Reference causal convolution (kernels/causal_conv.h): the sum of its definition per output
// element, sequential in T, libm's tanh.
#include <cmath>

#include "shoal/kernels/causal_conv.h"

namespace shoal::kernels {

namespace {

template <class T>
T act_of(ConvAct a, T z) {
  switch (a) {
    case ConvAct::kRelu:
      return z > T(0) ? z : T(0);
    case ConvAct::kTanh:
      return std::tanh(z);
    case ConvAct::kIdentity:
      break;
  }
  return z;
}

template <class T>
T act_grad_of(ConvAct a, T y) {
  switch (a) {
    case ConvAct::kRelu:
      return y > T(0) ? T(1) : T(0);
    case ConvAct::kTanh:
      return T(1) - y * y;
    case ConvAct::kIdentity:
      break;
  }
  return T(1);
}

}  // namespace

template <class T>
void causal_conv_forward_ref(const CausalConv<T>& c, const T* x, T* y) {
  const Index B = c.batch, I = c.in, O = c.out, K = c.kernel;
  for (Index t = 0; t < c.steps; ++t)
    for (Index b = 0; b < B; ++b)
      for (Index o = 0; o < O; ++o) {
        T s = c.b ? c.b[o] : T(0);
        for (Index k = 0; k < K; ++k) {
          const Index src =
              c.dir == ConvDir::kCausal ? t - (K - 1 - k) * c.dilation : t + k * c.dilation;
          if (src < 0 || src >= c.steps) continue;
          for (Index i = 0; i < I; ++i) s += c.w[(o * I + i) * K + k] * x[(src * B + b) * I + i];
        }
        y[(t * B + b) * O + o] = act_of(c.act, s);
      }
}

template <class T>
void causal_conv_backward_ref(const CausalConv<T>& c, const T* x, const T* y, T* dy, T* dx, T* dw,
                              T* db) {
  const Index B = c.batch, I = c.in, O = c.out, K = c.kernel, R = c.steps * B;
  for (Index r = 0; r < R * O; ++r) dy[r] *= act_grad_of(c.act, y[r]);
  if (db)
    for (Index o = 0; o < O; ++o) {
      T s = 0;
      for (Index r = 0; r < R; ++r) s += dy[r * O + o];
      db[o] += s;
    }
  if (dx)
    for (Index r = 0; r < R * I; ++r) dx[r] = T(0);
  for (Index k = 0; k < K; ++k) {
    // Output step t reads input step t + off (off ≤ 0 causal, ≥ 0 anti-causal).
    const Index off = c.dir == ConvDir::kCausal ? -(K - 1 - k) * c.dilation : k * c.dilation;
    for (Index t = 0; t < c.steps; ++t) {
      const Index src = t + off;
      if (src < 0 || src >= c.steps) continue;
      for (Index b = 0; b < B; ++b) {
        const T* g = dy + (t * B + b) * O;
        const T* xs = x + (src * B + b) * I;
        for (Index o = 0; o < O; ++o)
          for (Index i = 0; i < I; ++i) {
            dw[(o * I + i) * K + k] += g[o] * xs[i];
            if (dx) dx[(src * B + b) * I + i] += g[o] * c.w[(o * I + i) * K + k];
          }
      }
    }
  }
}

template void causal_conv_forward_ref<float>(const CausalConv<float>&, const float*, float*);
template void causal_conv_forward_ref<double>(const CausalConv<double>&, const double*, double*);
template void causal_conv_backward_ref<float>(const CausalConv<float>&, const float*, const float*,
                                              float*, float*, float*, float*);
template void causal_conv_backward_ref<double>(const CausalConv<double>&, const double*,
                                               const double*, double*, double*, double*, double*);

}  // namespace shoal::kernels
