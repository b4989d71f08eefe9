// Internal to src/shoal/models: the time-major plumbing the sequence encoders' models share
// (recurrent_forecast_impl.h: RNN, GRU, LSTM; context_forecast_impl.h: TCN, DilatedRNN; bitcn.cpp:
// BiTCN, its input and output reorders). Their encoders read and write [steps·B, width] rows,
// time-major (row t·B + w: window w at step t); the trainer speaks window-major [B·H, M]; the MLP
// decoder runs on the H horizon steps' states, each concatenated with that step's future
// exogenous values.
#pragma once

#include <algorithm>
#include <type_traits>
#include <vector>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/kernels/gemm.h"
#include "shoal/layers/linear.h"
#include "shoal/models/forecast.h"
#include "shoal/models/zones.h"
#include "shoal/profile/cost.h"

namespace shoal::models::time_major {

// The encoder's input x [L·B, 1 + X + S + F], neuralforecast's column order
// [y | hist | stat | futr] (the futr values of the L input steps).
template <class T>
void encoder_input(const ForecastInputs<T>& in, Index L, Index H, Index X, Index S, Index F,
                   MatView<T> x) {
  const Index B = in.batch;
  for (Index t = 0; t < L; ++t)
    for (Index w = 0; w < B; ++w) {
      T* row = x.row(t * B + w);
      row[0] = in.insample_y[w * L + t];
      for (Index c = 0; c < X; ++c) row[1 + c] = in.hist_exog[(w * X + c) * L + t];
      if (S > 0) std::copy_n(in.stat_exog + w * in.stat_window_stride, S, row + 1 + X);
      for (Index c = 0; c < F; ++c) row[1 + X + S + c] = in.futr_exog[(w * F + c) * (L + H) + t];
    }
}

// The decoder's input: the H steps' states u [H·B, hd] themselves (F = 0), or each with the
// step's F future exogenous values after it, in d [H·B, hd + F].
template <class T>
ConstMat<T> decoder_input(const ForecastInputs<T>& in, const T* u, Index L, Index H, Index hd,
                          Index F, MatView<T> d) {
  const Index B = in.batch;
  if (F == 0) return ConstMat<T>(u, H * B, hd);
  for (Index j = 0; j < H; ++j)
    for (Index w = 0; w < B; ++w) {
      T* row = std::copy_n(u + (j * B + w) * hd, hd, d.row(j * B + w));
      for (Index c = 0; c < F; ++c) row[c] = in.futr_exog[(w * F + c) * (L + H) + L + j];
    }
  return d;
}

// The decoder's layers on `x` [H·B, ·]: hidden outputs in a[k], the last in o. Returns o.
template <class T>
ConstMat<T> decode(const Ctx& ctx, std::vector<layers::Linear<T>>& decoder,
                   const std::vector<Buffer<T>>& a, const Buffer<T>& o,
                   ConstMat<std::type_identity_t<T>> x) {
  const Index rows = x.rows;
  for (size_t k = 0; k < decoder.size(); ++k) {
    const MatView<T> y =
        k + 1 < decoder.size() ? a[k].mat().rows_block(0, rows) : o.mat().rows_block(0, rows);
    decoder[k].forward(ctx, x, y);
    x = y;
  }
  return x;
}

// decode's backward from dout [H·B, M] to the decoder's input gradient dx0 (x0 its input).
template <class T>
void decode_backward(const Ctx& ctx, std::vector<layers::Linear<T>>& decoder,
                     const std::vector<Buffer<T>>& a, const Buffer<T>& o,
                     const std::vector<Buffer<T>>& da, ConstMat<std::type_identity_t<T>> x0,
                     ConstMat<std::type_identity_t<T>> dout, MatView<T> dx0) {
  const Index rows = dout.rows;
  for (size_t k = decoder.size(); k-- > 0;) {
    const ConstMat<T> xk = k == 0 ? x0 : ConstMat<T>(a[k - 1].mat().rows_block(0, rows));
    const ConstMat<T> yk = k + 1 < decoder.size() ? ConstMat<T>(a[k].mat().rows_block(0, rows))
                                                  : ConstMat<T>(o.mat().rows_block(0, rows));
    const MatView<T> dx = k == 0 ? dx0 : da[k - 1].mat().rows_block(0, rows);
    decoder[k].backward(ctx, xk, yk, dout, dx);
    dout = dx;
  }
}

// neuralforecast's Linear over the time axis of its states (a permute, the Linear, a permute
// back: LSTM's upsample_sequence, TCN's context_adapter), on time-major states it is one GEMM:
//   u [H, B·Hd] = W [H, L] · s [L, B·Hd] + b (step j's bias along row j)
// `lin` is Linear_{L→H}; cols = B·Hd.
template <class T>
void along_time(const layers::Linear<T>& lin, const T* s, Index cols, T* u) {
  const Index L = lin.cfg.in, H = lin.cfg.out;
  kernels::gemm<T>(kernels::Trans::kNo, kernels::Trans::kNo, H, cols, L, T(1),
                   lin.p.weight.value.data, L, s, cols, T(0), u, cols);
  const T* b = lin.p.bias.value.data;
  for (Index j = 0; j < H; ++j)
    for (Index i = 0; i < cols; ++i) u[j * cols + i] += b[j];
}
// Its backward: W's and b's gradients accumulate, ds [L, cols] is overwritten.
template <class T>
void along_time_backward(layers::Linear<T>& lin, const T* s, const T* du, Index cols, T* ds) {
  const Index L = lin.cfg.in, H = lin.cfg.out;
  auto& w = lin.p;
  kernels::gemm<T>(kernels::Trans::kNo, kernels::Trans::kYes, H, L, cols, T(1), du, cols, s, cols,
                   T(1), w.weight.grad.data, L);
  for (Index j = 0; j < H; ++j) {
    T sum = 0;
    for (Index i = 0; i < cols; ++i) sum += du[j * cols + i];
    w.bias.grad.data[j] += sum;
  }
  kernels::gemm<T>(kernels::Trans::kYes, kernels::Trans::kNo, L, cols, H, T(1), w.weight.value.data,
                   L, du, cols, T(0), ds, cols);
}
// Its profiler zones "<name>": per window, the Linear's cost over hd rows (its GEMMs' columns).
template <class T>
profile::LayerZones along_time_zones(profile::Recorder& rec, int model, const std::string& name,
                                     const layers::Linear<T>& lin, Index hd) {
  const double L = double(lin.cfg.in), H = double(lin.cfg.out), e = sizeof(T);
  return cost_zones(
      rec, model, name, double(hd),
      [&](double r) { return profile::linear_forward(r, L, H, true, profile::ActKind::kNone, e); },
      [&](double r) {
        return profile::linear_backward_dw(r, L, H, true, e) +
               profile::linear_backward_dx(r, L, H, profile::ActKind::kNone, e);
      });
}

// Time-major [H·B, M] → the trainer's window-major [B, H·M], and back.
template <class T>
void to_windows(ConstMat<std::type_identity_t<T>> y, Index B, Index H, Index M, MatView<T> out) {
  for (Index w = 0; w < B; ++w)
    for (Index j = 0; j < H; ++j) std::copy_n(y.row(j * B + w), M, out.row(w) + j * M);
}
template <class T>
void to_steps(ConstMat<std::type_identity_t<T>> dout, Index B, Index H, Index M, MatView<T> dy) {
  for (Index w = 0; w < B; ++w)
    for (Index j = 0; j < H; ++j) std::copy_n(dout.row(w * H + j), M, dy.row(j * B + w));
}

}  // namespace shoal::models::time_major
