// Scalar activation functions and their derivatives, shared by the reference kernels, the
// fused epilogues and the activation layers. ReLU's derivative is taken from its output
// (y > 0, with 0 at y = 0 as in PyTorch); GELU's from its input z.
#pragma once

#include <cmath>

#include "shoal/kernels/gemm.h"

namespace shoal::kernels {

template <class T>
inline T gelu(T z) {
  return T(0.5) * z * (T(1) + std::erf(z * T(0.70710678118654752440)));
}

template <class T>
inline T gelu_derivative(T z) {
  const T cdf = T(0.5) * (T(1) + std::erf(z * T(0.70710678118654752440)));
  const T pdf = T(0.39894228040143267794) * std::exp(T(-0.5) * z * z);
  return cdf + z * pdf;
}

template <class T>
inline T act_forward(Act act, T z) {
  switch (act) {
    case Act::kRelu:
      return z > T(0) ? z : T(0);
    case Act::kGelu:
      return gelu(z);
    case Act::kNone:
      break;
  }
  return z;
}

// `saved` is the ReLU output or the GELU input, matching linear_backward's act_saved.
template <class T>
inline T act_derivative(Act act, T saved) {
  switch (act) {
    case Act::kRelu:
      return saved > T(0) ? T(1) : T(0);
    case Act::kGelu:
      return gelu_derivative(saved);
    case Act::kNone:
      break;
  }
  return T(1);
}

}  // namespace shoal::kernels
