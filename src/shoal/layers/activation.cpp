#include "shoal/layers/activation.h"

#include "shoal/kernels/activations.h"

namespace shoal::layers {

template <class T, kernels::Act A>
void Activation<T, A>::forward(const Ctx&, ConstMat<T> x, MatView<T> y) {
  SHOAL_DCHECK(x.rows == y.rows && x.cols == y.cols);
  for (Index r = 0; r < x.rows; ++r) {
    const T* xr = x.row(r);
    T* yr = y.row(r);
    for (Index c = 0; c < x.cols; ++c) yr[c] = kernels::act_forward(A, xr[c]);
  }
}

template <class T, kernels::Act A>
void Activation<T, A>::backward(const Ctx&, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy,
                                MatView<T> dx) {
  SHOAL_DCHECK(dy.rows == dx.rows && dy.cols == dx.cols);
  // act_derivative takes ReLU's output and GELU's input (kernels/activations.h).
  const ConstMat<T> saved = A == kernels::Act::kRelu ? y : x;
  SHOAL_DCHECK(saved.rows == dy.rows && saved.cols == dy.cols);
  for (Index r = 0; r < dy.rows; ++r) {
    const T* sr = saved.row(r);
    const T* gr = dy.row(r);
    T* dr = dx.row(r);
    for (Index c = 0; c < dy.cols; ++c) dr[c] = gr[c] * kernels::act_derivative(A, sr[c]);
  }
}

template struct Activation<float, kernels::Act::kRelu>;
template struct Activation<double, kernels::Act::kRelu>;
template struct Activation<float, kernels::Act::kGelu>;
template struct Activation<double, kernels::Act::kGelu>;

}  // namespace shoal::layers
