// Fused Linear kernels. Both directions walk the batch in blocks of kRowBlock rows so that the
// elementwise work (bias + activation after the forward GEMM; the activation derivative and the
// bias-gradient column sums before the backward GEMMs) touches each block while it is still in
// L1, instead of making separate passes over [N, O] through memory.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "linear_simd.h"
#include "shoal/kernels/activations.h"
#include "shoal/kernels/gemm.h"
#include "shoal/kernels/reduce.h"
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
      // A select, not dy * (y > 0 ? 1 : 0): gcc compiled that multiply form to scalar code
      // with a branch per element (half of them mispredicted on real ReLU outputs); the
      // select vectorises to a compare and blend.
      for (Index j = 0; j < dy.cols; ++j) dzi[j] = si[j] > T(0) ? dyi[j] : T(0);
    } else {
      for (Index j = 0; j < dy.cols; ++j) dzi[j] = dyi[j] * gelu_derivative(si[j]);
    }
  }
  return dz;
}

// A layer whose weight outgrows half of L2 (I·O > 2¹⁶ elements: MLP's 1024 × 1024) runs as
// whole-batch GEMMs through gemm()'s backend choice (OpenBLAS's cache blocking for these
// shapes) plus the elementwise passes: the row-block kernels below stream the whole weight (or
// its packed transpose) through every block of 64–96 rows. Single core, best of 7 (GFLOP/s,
// fused → GEMMs): [N, I, O] = [1024, 1024, 1024] forward 73 → 101, backward 68 → 101;
// [1024, 512, 512] 94 → 103, 86 → 100; [32, 1024, 1024] 34 → 54, 26 → 79. At I·O = 2¹⁶
// ([1024, 256, 256]) the fused forward still wins (109 vs 104).
bool wide_layer(Index in, Index out) {
  return in * out > (Index{1} << 16);
}

template <class T>
void wide_forward(ConstMat<T> x, ConstMat<T> w, const T* b, Act act, MatView<T> y, MatView<T> pre) {
  const Index n = x.rows, in = x.cols, out = w.rows;
  const bool has_pre = pre.data != nullptr;
  MatView<T> target = has_pre ? pre : y;
  gemm<T>(Trans::kNo, Trans::kYes, n, out, in, T(1), x.data, x.ld, w.data, w.ld, T(0), target.data,
          target.ld);
  forward_epilogue<T>(act, b, n, out, target.data, target.ld, has_pre, y.data, y.ld);
}

// dz = dy ⊙ act'(saved) into the caller's dz (skipped for kNone), db (+)= its column sums,
// dx = dz · W[:, :dx.cols], dW (+)= dzᵀ · x.
template <class T>
void wide_backward(ConstMat<T> x, ConstMat<T> w, ConstMat<T> act_saved, Act act, ConstMat<T> dy,
                   MatView<T> dz, MatView<T> dx, MatView<T> dw, T* db, bool accumulate) {
  const Index n = dy.rows, out = dy.cols, in = x.cols;
  const ConstMat<T> d = backward_prologue<T>(act, dy, act_saved, dz);
  if (db) col_sums<T>(d, db, accumulate);
  if (dx.data && dx.cols > 0)
    gemm<T>(Trans::kNo, Trans::kNo, n, dx.cols, out, T(1), d.data, d.ld, w.data, w.ld, T(0),
            dx.data, dx.ld);
  gemm<T>(Trans::kYes, Trans::kNo, out, in, n, T(1), d.data, d.ld, x.data, x.ld,
          accumulate ? T(1) : T(0), dw.data, dw.ld);
}

template <class T>
void add_col_sums(ConstMat<T> m, T* __restrict acc) {
  for (Index i = 0; i < m.rows; ++i) {
    const T* __restrict r = m.row(i);
    for (Index j = 0; j < m.cols; ++j) acc[j] += r[j];
  }
}

// Rows per backward block: the compact dz block (kBwdRowBlock × O) is produced and read by
// both GEMMs while in L1. 96 measured 2–3% faster than 64 and no slower than 128
// (docs/kernels.md).
constexpr Index kBwdRowBlock = 96;

// The float backward: per row block, dz once into an L1 buffer (with the bias sums), then
// dx = dz·W (libxsmm NN) and dW (+)= dzᵀ·x (broadcast kernel) on that hot block.
void linear_backward_f32(ConstMat<float> x, ConstMat<float> w, ConstMat<float> act_saved, Act act,
                         ConstMat<float> dy, MatView<float> dx, MatView<float> dw, float* db,
                         bool accumulate) {
  const Index n = dy.rows, out = dy.cols, in = x.cols;
  float* col_sum = nullptr;
  if (db && out > 0) {
    col_sum = detail::scratch_as<float>(detail::ScratchSlot::kColSum, out);
    std::fill(col_sum, col_sum + out, 0.0f);
  }
  float* dzb = act == Act::kNone
                   ? nullptr
                   : detail::scratch_as<float>(detail::ScratchSlot::kPack,
                                               std::max<Index>(kBwdRowBlock * out, 1));
  if (n <= 0 && !accumulate && out > 0 && in > 0)
    for (Index o = 0; o < out; ++o) std::fill(dw.row(o), dw.row(o) + in, 0.0f);
  // dWᵀ orientation when O fills whole vectors: at [1280, 85, 32] 78–81 µs against 97 µs for
  // the direct form, whose 21 columns past 64 run as a masked 4 × 3 panel (docs/kernels.md).
  float* dwt = out % 8 == 0 && in > 0 && n > 0
                   ? detail::scratch_as<float>(detail::ScratchSlot::kGradT, in * out)
                   : nullptr;
  for (Index r0 = 0; r0 < n; r0 += kBwdRowBlock) {
    const Index rb = std::min(kBwdRowBlock, n - r0);
    const ConstMat<float> dyb = dy.rows_block(r0, rb);
    const ConstMat<float> saved =
        act == Act::kNone ? ConstMat<float>{} : act_saved.rows_block(r0, rb);
    if (act != Act::kNone || col_sum)
      detail::linear_backward_prologue(act, dyb, saved, dzb, col_sum);
    const float* a = act == Act::kNone ? dyb.data : dzb;
    const Index lda = act == Act::kNone ? dyb.ld : out;
    if (dx.data && dx.cols > 0) {
      // dx = dz · W: libxsmm's NN kernel (column-major dxᵀ = Wᵀ · dzᵀ) beat the broadcast
      // kernel on every bench shape (74 vs 66% of peak at [1280, 85, 32]). A width that is not
      // a multiple of 8 runs as its whole vectors plus one 8-wide kernel on the last 8 columns,
      // which recomputes a few columns (same values: the same dot products in the same order)
      // but keeps every vector full: at [1280, 85, 32] 92 µs against 104–114 µs for one
      // 85-wide kernel with a masked tail (docs/kernels.md).
      const auto run = [&](Index col, Index cols) {
        const detail::XsmmKey key{static_cast<int32_t>(cols),
                                  static_cast<int32_t>(rb),
                                  static_cast<int32_t>(out),
                                  static_cast<int32_t>(w.ld),
                                  static_cast<int32_t>(lda),
                                  static_cast<int32_t>(dx.ld),
                                  0,
                                  0};
        return detail::xsmm_run<float>(key, w.data + col, a, dx.row(r0) + col);
      };
      const Index whole = dx.cols / 8 * 8;
      const bool done =
          dx.cols > 8 && whole < dx.cols ? run(0, whole) && run(dx.cols - 8, 8) : run(0, dx.cols);
      if (!done)
        detail::bcast_gemm(rb, dx.cols, out, a, lda, 1, w.data, w.ld, dx.row(r0), dx.ld, false);
    }
    // dW (+)= dzᵀ · x with the broadcast kernel: no transpose of dz or x, and the tiles
    // accumulate across row blocks. With O a multiple of 8 it runs as dWᵀ = xᵀ · dz into a
    // compact [I, O] buffer (vector dimension O: no column tail), transposed into dW once at
    // the end; otherwise directly on dW (vector dimension I).
    if (in > 0 && out > 0) {
      if (dwt)
        detail::bcast_gemm(in, out, rb, x.row(r0), 1, x.ld, a, lda, dwt, out, r0 > 0);
      else
        detail::bcast_gemm(out, in, rb, a, 1, lda, x.row(r0), x.ld, dw.data, dw.ld,
                           accumulate || r0 > 0);
    }
  }
  if (dwt && n > 0) {
    for (Index o = 0; o < out; ++o) {
      float* __restrict d = dw.row(o);
      if (accumulate)
        for (Index i = 0; i < in; ++i) d[i] += dwt[i * out + o];
      else
        for (Index i = 0; i < in; ++i) d[i] = dwt[i * out + o];
    }
  }
  if (col_sum)
    for (Index o = 0; o < out; ++o) db[o] = accumulate ? db[o] + col_sum[o] : col_sum[o];
}

}  // namespace

template <class T>
void linear_forward(ConstMat<T> x, ConstMat<T> w, const T* b, Act act, MatView<T> y,
                    MatView<T> pre) {
  const Index n = x.rows, in = x.cols, out = w.rows;
  if (n <= 0 || out <= 0) return;
  if (wide_layer(in, out)) return wide_forward<T>(x, w, b, act, y, pre);
  // libxsmm cannot transpose its A operand, so pack Wᵀ [I, O] once per call (I·O moves
  // against N·I·O FMAs); then every row block is a plain NN kernel.
  T* wt = detail::scratch_as<T>(detail::ScratchSlot::kPack, std::max<Index>(in * out, 1));
  detail::transpose<T>(w.data, out, in, w.ld, wt, out);
  const bool has_pre = pre.data != nullptr;
  MatView<T> target = has_pre ? pre : y;
  if constexpr (std::is_same_v<T, float>) {
    // The broadcast kernel on the packed Wᵀ beat libxsmm's NN kernel on every bench shape
    // (best of 400, pinned: [1280,85,32] 73 vs 80 µs, [1280,16,8] 7.1 vs 10–14 µs,
    // [384,64,64] 33.5 vs 37.6 µs, docs/kernels.md). Below 8 outputs most lanes would idle.
    // Bias and ReLU are applied in registers as each tile is stored; otherwise (GELU, a kept
    // pre-activation, no bias) the epilogue pass runs on the block while it is in L1.
    if (out >= 8) {
      const bool fused = b != nullptr && !has_pre && (act == Act::kRelu || act == Act::kNone);
      const detail::Epi epi = !fused              ? detail::Epi::kStore
                              : act == Act::kRelu ? detail::Epi::kBiasRelu
                                                  : detail::Epi::kBias;
      for (Index r0 = 0; r0 < n; r0 += kBwdRowBlock) {
        const Index rb = std::min(kBwdRowBlock, n - r0);
        detail::bcast_gemm(rb, out, in, x.row(r0), x.ld, 1, wt, out, target.row(r0), target.ld, epi,
                           b);
        if (!fused)
          forward_epilogue<T>(act, b, rb, out, target.row(r0), target.ld, has_pre, y.row(r0), y.ld);
      }
      return;
    }
  }
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
  SHOAL_DCHECK(!dx.data || (dx.cols <= x.cols && dx.rows == dy.rows));
  if (dy.rows > 0 && wide_layer(x.cols, dy.cols) && (act == Act::kNone || dz.data != nullptr))
    return wide_backward<T>(x, w, act_saved, act, dy, dz, dx, dw, db, accumulate);
  if constexpr (std::is_same_v<T, float>) {
    linear_backward_f32(x, w, act_saved, act, dy, dx, dw, db, accumulate);
    return;
  }
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
    if (dx.data && dx.cols > 0) {
      // dx = dz · W: row-major NN, column-major dxᵀ = Wᵀ · dzᵀ with no transposes.
      const detail::XsmmKey key{static_cast<int32_t>(dx.cols),
                                static_cast<int32_t>(rb),
                                static_cast<int32_t>(out),
                                static_cast<int32_t>(w.ld),
                                static_cast<int32_t>(dzb.ld),
                                static_cast<int32_t>(dx.ld),
                                0,
                                0};
      if (!detail::xsmm_run<T>(key, w.data, dzb.data, dx.row(r0)))
        detail::blas_gemm<T>(false, false, rb, dx.cols, out, T(1), dzb.data, dzb.ld, w.data, w.ld,
                             T(0), dx.row(r0), dx.ld);
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
