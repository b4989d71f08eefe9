#include "shoal/layers/pointwise.h"

#include <cmath>

namespace shoal::layers {
namespace {

constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;

template <class T, Pointwise Fn>
T value(T x, T slope) {
  if constexpr (Fn == Pointwise::kSoftplus) {
    return x > T(20) ? x : std::log1p(std::exp(x));
  } else if constexpr (Fn == Pointwise::kTanh) {
    return std::tanh(x);
  } else if constexpr (Fn == Pointwise::kSelu) {
    return x > T(0) ? T(kSeluScale) * x : T(kSeluScale) * T(kSeluAlpha) * std::expm1(x);
  } else if constexpr (Fn == Pointwise::kLeakyRelu) {
    return x > T(0) ? x : x * slope;
  } else {
    return T(1) / (T(1) + std::exp(-x));
  }
}

// f' from the saved input x (Softplus, SELU, LeakyReLU) or output y (Tanh, Sigmoid).
template <class T, Pointwise Fn>
T derivative(T x, T y, T slope) {
  if constexpr (Fn == Pointwise::kSoftplus) {
    if (x > T(20)) return T(1);
    const T z = std::exp(x);
    return z / (z + T(1));
  } else if constexpr (Fn == Pointwise::kTanh) {
    return T(1) - y * y;
  } else if constexpr (Fn == Pointwise::kSelu) {
    return x > T(0) ? T(kSeluScale) : T(kSeluScale) * T(kSeluAlpha) * std::exp(x);
  } else if constexpr (Fn == Pointwise::kLeakyRelu) {
    return x > T(0) ? T(1) : slope;
  } else {
    return y * (T(1) - y);
  }
}

constexpr bool from_output(Pointwise f) {
  return f == Pointwise::kTanh || f == Pointwise::kSigmoid;
}

}  // namespace

double pointwise_flops(Pointwise f) {
  switch (f) {
    case Pointwise::kSoftplus:
      return 3;  // exp, add, log
    case Pointwise::kTanh:
      return 1;
    case Pointwise::kSelu:
      return 3;  // compare, exp, scale
    case Pointwise::kLeakyRelu:
      return 1;
    case Pointwise::kSigmoid:
      return 3;  // exp, add, divide
  }
  return 1;
}

double pointwise_grad_flops(Pointwise f) {
  switch (f) {
    case Pointwise::kSoftplus:
      return 4;  // exp, add, divide, multiply
    case Pointwise::kTanh:
      return 3;
    case Pointwise::kSelu:
      return 3;
    case Pointwise::kLeakyRelu:
      return 2;
    case Pointwise::kSigmoid:
      return 3;
  }
  return 2;
}

template <class T, Pointwise Fn>
void PointwiseAct<T, Fn>::forward(const Ctx&, ConstMat<T> x, MatView<T> y) {
  SHOAL_DCHECK(x.rows == y.rows && x.cols == y.cols);
  const T slope = static_cast<T>(cfg.negative_slope);
  for (Index r = 0; r < x.rows; ++r) {
    const T* xr = x.row(r);
    T* yr = y.row(r);
    for (Index c = 0; c < x.cols; ++c) yr[c] = value<T, Fn>(xr[c], slope);
  }
}

template <class T, Pointwise Fn>
void PointwiseAct<T, Fn>::backward(const Ctx&, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy,
                                   MatView<T> dx) {
  SHOAL_DCHECK(dy.rows == dx.rows && dy.cols == dx.cols);
  const T slope = static_cast<T>(cfg.negative_slope);
  const ConstMat<T> saved = from_output(Fn) ? y : x;
  SHOAL_DCHECK(saved.rows == dy.rows && saved.cols == dy.cols);
  for (Index r = 0; r < dy.rows; ++r) {
    const T* sr = saved.row(r);
    const T* gr = dy.row(r);
    T* dr = dx.row(r);
    for (Index c = 0; c < dy.cols; ++c)
      dr[c] = gr[c] * (from_output(Fn) ? derivative<T, Fn>(T(0), sr[c], slope)
                                       : derivative<T, Fn>(sr[c], T(0), slope));
  }
}

template <class T>
void PReLU<T>::plan(Planner& planner, Index) {
  planner.param(p.weight, "weight", {1});
}

template <class T>
void PReLU<T>::init(RngStream&) {
  // torch fills the float tensor with `init`; the double twin starts from the same float value.
  p.weight.value.data[0] = static_cast<T>(static_cast<float>(cfg.init));
}

template <class T>
void PReLU<T>::forward(const Ctx&, ConstMat<T> x, MatView<T> y) {
  SHOAL_DCHECK(x.rows == y.rows && x.cols == y.cols);
  const T a = p.weight.value.data[0];
  for (Index r = 0; r < x.rows; ++r) {
    const T* xr = x.row(r);
    T* yr = y.row(r);
    for (Index c = 0; c < x.cols; ++c) yr[c] = xr[c] > T(0) ? xr[c] : a * xr[c];
  }
}

template <class T>
void PReLU<T>::backward(const Ctx&, ConstMat<T> x, ConstMat<T>, ConstMat<T> dy, MatView<T> dx) {
  SHOAL_DCHECK(x.rows == dy.rows && x.cols == dy.cols);
  const T a = p.weight.value.data[0];
  // Summed in double per call, so the float weight's gradient does not drift over long rows.
  double da = 0;
  for (Index r = 0; r < dy.rows; ++r) {
    const T* xr = x.row(r);
    const T* gr = dy.row(r);
    T* dr = dx.data != nullptr ? dx.row(r) : nullptr;
    for (Index c = 0; c < dy.cols; ++c) {
      const bool pos = xr[c] > T(0);
      if (!pos) da += static_cast<double>(xr[c]) * static_cast<double>(gr[c]);
      if (dr != nullptr) dr[c] = pos ? gr[c] : a * gr[c];
    }
  }
  p.weight.grad.data[0] += static_cast<T>(da);
}

template struct PointwiseAct<float, Pointwise::kSoftplus>;
template struct PointwiseAct<double, Pointwise::kSoftplus>;
template struct PointwiseAct<float, Pointwise::kTanh>;
template struct PointwiseAct<double, Pointwise::kTanh>;
template struct PointwiseAct<float, Pointwise::kSelu>;
template struct PointwiseAct<double, Pointwise::kSelu>;
template struct PointwiseAct<float, Pointwise::kLeakyRelu>;
template struct PointwiseAct<double, Pointwise::kLeakyRelu>;
template struct PointwiseAct<float, Pointwise::kSigmoid>;
template struct PointwiseAct<double, Pointwise::kSigmoid>;
template struct PReLU<float>;
template struct PReLU<double>;

}  // namespace shoal::layers
