// Fused Linear kernels. Both directions walk the batch in blocks of kRowBlock rows so that the
// elementwise work (bias + activation after the forward GEMM; the activation derivative and the
// bias-gradient column sums before the backward GEMMs) touches each block while it is still in
// L1, instead of making separate passes over [N, O] through memory.
#include <algorithm>
#include <cstring>

#include "shoal/kernels/activations.h"
#include "shoal/kernels/gemm.h"
#include "xsmm_backend.h"

namespace shoal::kernels {

namespace {

// Rows per block: x block (64 × I) plus y/dz blocks (64 × O) stay within L1 for the widths a
// small Linear has (I, O ≤ ~100); measured in `shoal bench kernels` (docs/kernels.md).
constexpr Index kRowBlock = 64;

template <class T>
void forward_epilogue(Act act, const T* b, Index rows, Index cols, T* out, Index out_ld,
                      bool out_is_pre, T* y, Index y_ld) {
  for (Index i = 0; i < rows; ++i) {
    T* __restrict o = out + i * out_ld;
    T* __restrict yi = y + i * y_ld;
    if (b)
      for (Index j = 0; j < cols; ++j) o[j] += b[j];
    if (act == Act::kRelu) {
      for (Index j = 0; j < cols; ++j) yi[j] = o[j] > T(0) ? o[j] : T(0);
    } else if (act == Act::kGelu) {
      for (Index j = 0; j < cols; ++j) yi[j] = gelu(o[j]);
    } else if (out_is_pre) {
      std::memcpy(yi, o, sizeof(T) * static_cast<size_t>(cols));
    }
  }
}

// dz = dy ⊙ act'(saved) on a row block; returns the view the GEMMs should read.
template <class T>
ConstMat<T> backward_prologue(Act act, ConstMat<T> dy, ConstMat<T> saved, MatView<T> dz) {
  if (act == Act::kNone) return dy;  // dz would be a copy of dy: skip the pass
  for (Index i = 0; i < dy.rows; ++i) {
    const T* __restrict dyi = dy.row(i);
    const T* __restrict si = saved.row(i);
    T* __restrict dzi = dz.row(i);
    if (act == Act::kRelu) {
      for (Index j = 0; j < dy.cols; ++j) dzi[j] = dyi[j] * (si[j] > T(0) ? T(1) : T(0));
    } else {
      for (Index j = 0; j < dy.cols; ++j) dzi[j] = dyi[j] * gelu_derivative(si[j]);
    }
  }
  return dz;
}

template <class T>
void add_col_sums(ConstMat<T> m, T* __restrict acc) {
  for (Index i = 0; i < m.rows; ++i) {
    const T* __restrict r = m.row(i);
    for (Index j = 0; j < m.cols; ++j) acc[j] += r[j];
  }
}

}  // namespace

template <class T>
void linear_forward(ConstMat<T> x, ConstMat<T> w, const T* b, Act act, MatView<T> y,
                    MatView<T> pre) {
  const Index n = x.rows, in = x.cols, out = w.rows;
  if (n <= 0 || out <= 0) return;
  // libxsmm cannot transpose its A operand, so pack Wᵀ [I, O] once per call (I·O moves
  // against N·I·O FMAs); then every row block is a plain NN kernel.
  T* wt = detail::scratch_as<T>(detail::ScratchSlot::kPack, std::max<Index>(in * out, 1));
  detail::transpose<T>(w.data, out, in, w.ld, wt, out);
  const bool has_pre = pre.data != nullptr;
  MatView<T> target = has_pre ? pre : y;
  for (Index r0 = 0; r0 < n; r0 += kRowBlock) {
    const Index rb = std::min(kRowBlock, n - r0);
    T* c = target.row(r0);
    const detail::XsmmKey key{static_cast<int32_t>(out),
                              static_cast<int32_t>(rb),
                              static_cast<int32_t>(in),
                              static_cast<int32_t>(out),
                              static_cast<int32_t>(x.ld),
                              static_cast<int32_t>(target.ld),
                              0,
                              0};
    if (!detail::xsmm_run<T>(key, wt, x.row(r0), c))
      detail::blas_gemm<T>(false, true, rb, out, in, T(1), x.row(r0), x.ld, w.data, w.ld, T(0), c,
                           target.ld);
    forward_epilogue<T>(act, b, rb, out, c, target.ld, has_pre, y.row(r0), y.ld);
  }
}

template <class T>
void linear_backward(ConstMat<T> x, ConstMat<T> w, ConstMat<T> act_saved, Act act, ConstMat<T> dy,
                     MatView<T> dz, MatView<T> dx, MatView<T> dw, T* db, bool accumulate) {
  const Index n = dy.rows, out = dy.cols, in = x.cols;
  T* col_sum = nullptr;
  if (db && out > 0) {
    col_sum = detail::scratch_as<T>(detail::ScratchSlot::kColSum, out);
    std::fill(col_sum, col_sum + out, T(0));
  }
  T* dzt = detail::scratch_as<T>(detail::ScratchSlot::kPack, std::max<Index>(kRowBlock * out, 1));
  if (n <= 0 && !accumulate && out > 0 && in > 0)
    for (Index o = 0; o < out; ++o) std::fill(dw.row(o), dw.row(o) + in, T(0));
  for (Index r0 = 0; r0 < n; r0 += kRowBlock) {
    const Index rb = std::min(kRowBlock, n - r0);
    const ConstMat<T> dzb =
        backward_prologue<T>(act, dy.rows_block(r0, rb),
                             act == Act::kNone ? ConstMat<T>{} : act_saved.rows_block(r0, rb),
                             act == Act::kNone ? MatView<T>{} : dz.rows_block(r0, rb));
    if (col_sum) add_col_sums<T>(dzb, col_sum);
    if (dx.data && in > 0) {
      // dx = dz · W: row-major NN, column-major dxᵀ = Wᵀ · dzᵀ with no transposes.
      const detail::XsmmKey key{static_cast<int32_t>(in),
                                static_cast<int32_t>(rb),
                                static_cast<int32_t>(out),
                                static_cast<int32_t>(w.ld),
                                static_cast<int32_t>(dzb.ld),
                                static_cast<int32_t>(dx.ld),
                                0,
                                0};
      if (!detail::xsmm_run<T>(key, w.data, dzb.data, dx.row(r0)))
        detail::blas_gemm<T>(false, false, rb, in, out, T(1), dzb.data, dzb.ld, w.data, w.ld, T(0),
                             dx.row(r0), dx.ld);
    }
    if (in > 0 && out > 0) {
      // dW (+)= dzᵀ · x: row-major TN, i.e. column-major dWᵀ = xᵀ · dz. libxsmm's transposed-B
      // kernel is slow on AVX2, so transpose the (L1-resident) dz block to dzᵀ [O, rb] and run
      // the NN kernel: column-major dWᵀ[I, O] = x_block[I, rb] · dzᵀ[rb, O].
      detail::transpose<T>(dzb.data, rb, out, dzb.ld, dzt, rb);
      const bool beta_one = accumulate || r0 > 0;
      const detail::XsmmKey key{static_cast<int32_t>(in),
                                static_cast<int32_t>(out),
                                static_cast<int32_t>(rb),
                                static_cast<int32_t>(x.ld),
                                static_cast<int32_t>(rb),
                                static_cast<int32_t>(dw.ld),
                                0,
                                static_cast<uint8_t>(beta_one)};
      if (!detail::xsmm_run<T>(key, x.row(r0), dzt, dw.data))
        detail::blas_gemm<T>(true, false, out, in, rb, T(1), dzb.data, dzb.ld, x.row(r0), x.ld,
                             beta_one ? T(1) : T(0), dw.data, dw.ld);
    }
  }
  if (col_sum)
    for (Index o = 0; o < out; ++o) db[o] = accumulate ? db[o] + col_sum[o] : col_sum[o];
}

#define SHOAL_INSTANTIATE(T)                                                                \
  template void linear_forward<T>(ConstMat<T>, ConstMat<T>, const T*, Act, MatView<T>,      \
                                  MatView<T>);                                              \
  template void linear_backward<T>(ConstMat<T>, ConstMat<T>, ConstMat<T>, Act, ConstMat<T>, \
                                   MatView<T>, MatView<T>, MatView<T>, T*, bool);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::kernels
