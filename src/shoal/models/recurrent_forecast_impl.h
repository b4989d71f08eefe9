// Internal to src/shoal/models: the definitions of models/recurrent_forecast.h, instantiated by
// each model's source (rnn.cpp, gru.cpp, lstm.cpp) for its own Config.
#pragma once

#include <algorithm>

#include "shoal/kernels/gemm.h"
#include "shoal/models/recurrent_forecast.h"
#include "shoal/models/zones.h"
#include "shoal/profile/cost.h"
#include "time_major.h"

namespace shoal::models {

namespace recurrent_detail {

inline kernels::Act decoder_act(const std::string& name) {
  return name == "ReLU"   ? kernels::Act::kRelu
         : name == "GELU" ? kernels::Act::kGelu
                          : kernels::Act::kNone;
}

}  // namespace recurrent_detail

template <class T, class C>
RecurrentForecast<T, C>::RecurrentForecast(Config c)
    : Base(c),
      encoder_({.cell = C::kCell,
                .in = encoder_in(),
                .hidden = c.encoder_hidden_size,
                .num_layers = c.encoder_n_layers,
                .steps = c.input_size,
                .bias = c.encoder_bias,
                .dropout = c.encoder_dropout,
                .stream = 0x7263'0000}) {
  const Index layers = cfg().decoder_layers, width = cfg().decoder_hidden_size;
  const kernels::Act act = recurrent_detail::decoder_act(cfg().decoder_activation);
  for (Index k = 0; k < layers; ++k) {
    const bool last = k + 1 == layers;
    decoder_.push_back(layers::Linear<T>({.in = k == 0 ? decoder_in() : width,
                                          .out = last ? cfg().outputs : width,
                                          .act = last ? kernels::Act::kNone : act}));
  }
  if (cfg().h > cfg().input_size)
    upsample_ = std::make_unique<layers::Linear<T>>(
        typename layers::Linear<T>::Config{.in = cfg().input_size, .out = cfg().h});
  a_.resize(size_t(layers - 1));
  da_.resize(a_.size());
}

template <class T, class C>
void RecurrentForecast<T, C>::plan(Planner& planner, Index max_batch) {
  Base::set_max_batch(max_batch);
  const Index B = max_batch, L = cfg().input_size, H = cfg().h, hd = cfg().encoder_hidden_size;
  planner.push_scope("hist_encoder.");
  encoder_.plan(planner, L * B);
  planner.pop_scope();
  for (size_t k = 0; k < decoder_.size(); ++k) {
    planner.push_scope("mlp_decoder.layers." + std::to_string(3 * k) + ".");
    decoder_[k].plan(planner, H * B);
    planner.pop_scope();
  }
  if (upsample_) {
    planner.push_scope("upsample_sequence.");
    upsample_->plan(planner, 0 + 1);
    planner.pop_scope();
    planner.buffer(u_, Region::kActivations, "u", {H * B, hd});
    planner.buffer(du_, Region::kActivationGrads, "du", {H * B, hd});
  }
  planner.buffer(x_, Region::kActivations, "x", {L * B, encoder_in()});
  planner.buffer(s_, Region::kActivations, "s", {L * B, hd});
  planner.buffer(ds_, Region::kActivationGrads, "ds", {L * B, hd});
  if (cfg().futr_exog > 0) {
    planner.buffer(d_, Region::kActivations, "d", {H * B, decoder_in()});
    planner.buffer(dd_, Region::kActivationGrads, "dd", {H * B, decoder_in()});
  }
  for (size_t k = 0; k < a_.size(); ++k) {
    planner.buffer(a_[k], Region::kActivations, "a" + std::to_string(k),
                   {H * B, cfg().decoder_hidden_size});
    planner.buffer(da_[k], Region::kActivationGrads, "da" + std::to_string(k),
                   {H * B, cfg().decoder_hidden_size});
  }
  planner.buffer(o_, Region::kActivations, "o", {H * B, cfg().outputs});
  planner.buffer(do_, Region::kActivationGrads, "do", {H * B, cfg().outputs});
  planner.buffer(out_, Region::kActivations, "out", {B, H * cfg().outputs});
}

template <class T, class C>
ConstMat<T> RecurrentForecast<T, C>::decoder_input(const Ctx&, const ForecastInputs<T>& in) {
  const Index B = in.batch, L = cfg().input_size, H = cfg().h, hd = cfg().encoder_hidden_size,
              F = cfg().futr_exog;
  // The states the decoder reads, time-major [H·B, Hd]: the upsampled ones, or the last H steps.
  const T* u = upsample_ ? u_.view.data : s_.view.data + (L - H) * B * hd;
  return time_major::decoder_input(in, u, L, H, hd, F,
                                   F > 0 ? d_.mat().rows_block(0, H * B) : MatView<T>{});
}

template <class T, class C>
MatView<T> RecurrentForecast<T, C>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  Base::check_inputs(in);
  const Index B = in.batch, L = cfg().input_size, H = cfg().h, hd = cfg().encoder_hidden_size,
              X = cfg().hist_exog, S = cfg().stat_exog, F = cfg().futr_exog, M = cfg().outputs;
  profile::ZoneChain zone(ctx.profiler, B);
  zone.next(zenc_.forward);
  MatView<T> x = x_.mat().rows_block(0, L * B);
  time_major::encoder_input(in, L, H, X, S, F, x);
  MatView<T> s = s_.mat().rows_block(0, L * B);
  encoder_.forward(ctx, x, s, in.first_window);
  if (upsample_) {
    // Along time: u [H, B·Hd] = W [H, L] · s [L, B·Hd] + b, one GEMM on the time-major states.
    zone.next(zup_.forward);
    T* u = u_.view.data;
    kernels::gemm<T>(kernels::Trans::kNo, kernels::Trans::kNo, H, B * hd, L, T(1),
                     upsample_->p.weight.value.data, L, s.data, B * hd, T(0), u, B * hd);
    const T* b = upsample_->p.bias.value.data;
    for (Index j = 0; j < H; ++j)
      for (Index i = 0; i < B * hd; ++i) u[j * B * hd + i] += b[j];
  }
  zone.next(zdec_.forward);
  ConstMat<T> cur = decoder_input(ctx, in);
  MatView<T> out = out_.mat().rows_block(0, B);
  time_major::to_windows(time_major::decode(ctx, decoder_, a_, o_, cur), B, H, M, out);
  return MatView<T>(out.data, B * H, M);
}

template <class T, class C>
void RecurrentForecast<T, C>::backward(const Ctx& ctx, const ForecastInputs<T>& in,
                                       ConstMat<T> dout) {
  const Index B = in.batch, L = cfg().input_size, H = cfg().h, hd = cfg().encoder_hidden_size,
              F = cfg().futr_exog, M = cfg().outputs;
  profile::ZoneChain zone(ctx.profiler, B);
  zone.next(zdec_.backward);
  MatView<T> dot = do_.mat().rows_block(0, H * B);
  time_major::to_steps(dout, B, H, M, dot);
  // The decoder's input gradient lands where the encoder side reads it: dd (with future
  // exogenous), du (upsampled), or ds's last H steps.
  MatView<T> ds = ds_.mat().rows_block(0, L * B);
  const MatView<T> dstates =
      upsample_ ? du_.mat().rows_block(0, H * B) : ds.rows_block((L - H) * B, H * B);
  const MatView<T> dfirst = F > 0 ? dd_.mat().rows_block(0, H * B) : dstates;
  const ConstMat<T> x0 =
      F > 0 ? ConstMat<T>(d_.mat().rows_block(0, H * B))
            : ConstMat<T>((upsample_ ? u_.view.data : s_.view.data + (L - H) * B * hd), H * B, hd);
  time_major::decode_backward(ctx, decoder_, a_, o_, da_, x0, dot, dfirst);
  if (F > 0)
    for (Index r = 0; r < H * B; ++r) std::copy_n(dfirst.row(r), hd, dstates.row(r));
  if (upsample_) {
    zone.next(zup_.backward);
    const T* du = du_.view.data;
    const T* s = s_.view.data;
    auto& w = upsample_->p;
    kernels::gemm<T>(kernels::Trans::kNo, kernels::Trans::kYes, H, L, B * hd, T(1), du, B * hd, s,
                     B * hd, T(1), w.weight.grad.data, L);
    for (Index j = 0; j < H; ++j) {
      T sum = 0;
      for (Index i = 0; i < B * hd; ++i) sum += du[j * B * hd + i];
      w.bias.grad.data[j] += sum;
    }
    kernels::gemm<T>(kernels::Trans::kYes, kernels::Trans::kNo, L, B * hd, H, T(1),
                     w.weight.value.data, L, du, B * hd, T(0), ds.data, B * hd);
  } else if (L > H) {
    std::fill_n(ds.data, (L - H) * B * hd, T(0));  // the steps the decoder does not read
  }
  zone.next(zenc_.backward);
  // The encoder's input is data: no input gradient.
  encoder_.backward(ctx, x_.mat().rows_block(0, L * B), s_.mat().rows_block(0, L * B), ds,
                    MatView<T>{}, in.first_window);
}

template <class T, class C>
void RecurrentForecast<T, C>::register_zones(profile::Recorder& rec, int model) {
  const double L = double(cfg().input_size), H = double(cfg().h),
               hd = double(cfg().encoder_hidden_size), e = sizeof(T);
  zenc_ = block_zones(rec, model, "hist_encoder", L, encoder_, /*dx=*/false);
  if (upsample_)
    zup_ = cost_zones(
        rec, model, "upsample_sequence", hd,
        [&](double r) {
          return profile::linear_forward(r, L, H, true, profile::ActKind::kNone, e);
        },
        [&](double r) {
          return profile::linear_backward_dw(r, L, H, true, e) +
                 profile::linear_backward_dx(r, L, H, profile::ActKind::kNone, e);
        });
  zdec_ = cost_zones(
      rec, model, "mlp_decoder", H,
      [this](double r) {
        profile::Cost c;
        for (const auto& l : decoder_) c += l.forward_cost(r);
        return c;
      },
      [this](double r) {
        profile::Cost c;
        for (const auto& l : decoder_) c += l.backward_cost(r, true);
        return c;
      });
}

}  // namespace shoal::models
