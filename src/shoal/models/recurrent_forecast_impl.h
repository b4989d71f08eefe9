// Internal to src/shoal/models: the definitions of models/recurrent_forecast.h, instantiated by
// each model's source (rnn.cpp, gru.cpp, lstm.cpp) for its own Config.
#pragma once

#include <algorithm>

#include "shoal/kernels/gemm.h"
#include "shoal/layers/losses.h"
#include "shoal/models/recurrent_forecast.h"
#include "shoal/models/zones.h"
#include "shoal/profile/cost.h"
#include "time_major.h"

namespace shoal::models {

template <class T, class C>
RecurrentForecast<T, C>::RecurrentForecast(Config c)
    : Base(c),
      encoder_({.cell = C::kCell,
                .in = encoder_in(),
                .hidden = c.encoder_hidden_size,
                .num_layers = c.encoder_n_layers,
                .proj = c.recurrent && C::kCell == kernels::RnnCell::kLstm ? c.outputs : 0,
                .steps = c.input_size,
                .bias = c.encoder_bias,
                .dropout = c.encoder_dropout,
                .stream = 0x7263'0000}) {
  max_steps_ = c.input_size;
  if (c.recurrent) {
    SHOAL_CHECK(c.feedback_output != layers::kNoRecurrentFeedback,
                "{}: recurrent=true feeds each forecast's mean back as the next input, and this "
                "loss's distribution (Poisson, GMM) has no output that is its mean; use a point "
                "loss, MQLoss, or a Normal or StudentT DistributionLoss",
                C::kKind.name);
    SHOAL_CHECK(c.feedback_output < c.outputs, "{}: feedback output {} of {}", C::kKind.name,
                c.feedback_output, c.outputs);
    // The longest sequence: a training window's L + 1 inputs and h_train − 1 targets, or the
    // inference window's L_e inputs and H − 1 forecasts fed back.
    max_steps_ =
        std::max(window_input_size(true) + c.h_train - 1, window_input_size(false) + c.h - 1);
    encoder_.cfg.steps = max_steps_;
    if (C::kCell == kernels::RnnCell::kLstm)
      SHOAL_CHECK(c.outputs < c.encoder_hidden_size,
                  "{}: recurrent=true projects the LSTM's state to the loss's {} outputs per "
                  "value, which needs encoder_hidden_size > {} (PyTorch's proj_size < "
                  "hidden_size), got {}",
                  C::kKind.name, c.outputs, c.outputs, c.encoder_hidden_size);
    else
      proj_ = std::make_unique<layers::Linear<T>>(
          typename layers::Linear<T>::Config{.in = c.encoder_hidden_size, .out = c.outputs});
    return;  // no MLP decoder
  }
  decoder_ = std::make_unique<MlpDecoder<T>>(c.mlp_decoder_config(c, c.encoder_hidden_size));
  if (cfg().h > cfg().input_size)
    upsample_ = std::make_unique<layers::Linear<T>>(
        typename layers::Linear<T>::Config{.in = cfg().input_size, .out = cfg().h});
}

template <class T, class C>
Index RecurrentForecast<T, C>::window_input_size(bool training) const {
  if (!cfg().recurrent) return cfg().input_size;
  if (training || cfg().inference_input_size == 0) return cfg().input_size + 1;
  return cfg().inference_input_size + 1;
}

template <class T, class C>
Index RecurrentForecast<T, C>::window_horizon(bool training) const {
  return cfg().recurrent && training ? cfg().h_train : cfg().h;
}

template <class T, class C>
Index RecurrentForecast<T, C>::state_width() const {
  return encoder_.cfg.proj > 0 ? encoder_.cfg.proj : cfg().encoder_hidden_size;
}

template <class T, class C>
void RecurrentForecast<T, C>::plan(Planner& planner, Index max_batch) {
  Base::set_max_batch(max_batch);
  if (cfg().recurrent) {
    const Index B = max_batch, tn = max_steps_, rw = state_width(), M = cfg().outputs;
    // Outputs: the last h_train steps' in training, one step's at a time as it decodes.
    const Index orows = std::max(cfg().h_train, Index(1)) * B;
    plan_layer(planner, "hist_encoder.", encoder_, tn * B);
    if (proj_) plan_layer(planner, "proj.", *proj_, orows);
    planner.buffer(x_, Region::kActivations, "x", {tn * B, encoder_in()});
    planner.buffer(s_, Region::kActivations, "s", {tn * B, rw});
    planner.buffer(ds_, Region::kActivationGrads, "ds", {tn * B, rw});
    planner.buffer(o_, Region::kActivations, "o", {orows, M});
    planner.buffer(do_, Region::kActivationGrads, "do", {orows, M});
    planner.buffer(out_, Region::kActivations, "out", {B, std::max(cfg().h, cfg().h_train) * M});
    return;
  }
  const Index B = max_batch, L = cfg().input_size, H = cfg().h, hd = cfg().encoder_hidden_size;
  plan_layer(planner, "hist_encoder.", encoder_, L * B);
  decoder_->plan(planner, B);
  if (upsample_) {
    plan_layer(planner, "upsample_sequence.", *upsample_, 0 + 1);  // runs along time (forward)
    planner.buffer(u_, Region::kActivations, "u", {H * B, hd});
    planner.buffer(du_, Region::kActivationGrads, "du", {H * B, hd});
  }
  planner.buffer(x_, Region::kActivations, "x", {L * B, encoder_in()});
  planner.buffer(s_, Region::kActivations, "s", {L * B, hd});
  planner.buffer(ds_, Region::kActivationGrads, "ds", {L * B, hd});
}

template <class T, class C>
ConstMat<T> RecurrentForecast<T, C>::decoder_states(Index batch) const {
  const Index L = cfg().input_size, H = cfg().h, hd = cfg().encoder_hidden_size;
  return ConstMat<T>(upsample_ ? u_.view.data : s_.view.data + (L - H) * batch * hd, H * batch, hd);
}

template <class T, class C>
MatView<T> RecurrentForecast<T, C>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  Base::check_inputs(in);
  if (cfg().recurrent) return ctx.training ? forward_teacher(ctx, in) : forward_decode(ctx, in);
  const Index B = in.batch, L = cfg().input_size, H = cfg().h, hd = cfg().encoder_hidden_size;
  profile::ZoneChain zone(ctx.profiler, B);
  zone.next(zenc_.forward);
  MatView<T> x = x_.mat().rows_block(0, L * B);
  time_major::encoder_input(in, L, H, cfg().hist_exog, cfg().stat_exog, cfg().futr_exog, x);
  MatView<T> s = s_.mat().rows_block(0, L * B);
  encoder_.forward(ctx, x, s, in.first_window);
  if (upsample_) {
    zone.next(zup_.forward);
    time_major::along_time(*upsample_, s.data, B * hd, u_.view.data);
  }
  zone.next(decoder_->zones().forward);
  return decoder_->forward(ctx, in, decoder_states(B));
}

template <class T, class C>
void RecurrentForecast<T, C>::backward(const Ctx& ctx, const ForecastInputs<T>& in,
                                       ConstMat<T> dout) {
  if (cfg().recurrent) return backward_teacher(ctx, in, dout);
  const Index B = in.batch, L = cfg().input_size, H = cfg().h, hd = cfg().encoder_hidden_size;
  profile::ZoneChain zone(ctx.profiler, B);
  zone.next(decoder_->zones().backward);
  // The decoder's input gradient lands where the encoder side reads it: du (upsampled) or ds's
  // last H steps.
  MatView<T> ds = ds_.mat().rows_block(0, L * B);
  const MatView<T> dstates =
      upsample_ ? du_.mat().rows_block(0, H * B) : ds.rows_block((L - H) * B, H * B);
  decoder_->backward(ctx, in, decoder_states(B), dout, dstates);
  if (upsample_) {
    zone.next(zup_.backward);
    time_major::along_time_backward(*upsample_, s_.view.data, du_.view.data, B * hd, ds.data);
  } else if (L > H) {
    std::fill_n(ds.data, (L - H) * B * hd, T(0));  // the steps the decoder does not read
  }
  zone.next(zenc_.backward);
  // The encoder's input is data: no input gradient.
  encoder_.backward(ctx, x_.mat().rows_block(0, L * B), s_.mat().rows_block(0, L * B), ds,
                    MatView<T>{}, in.first_window);
}

template <class T, class C>
void RecurrentForecast<T, C>::step_inputs(const ForecastInputs<T>& in, Index li, Index hz, Index p0,
                                          Index p1) {
  const Index B = in.batch, X = cfg().hist_exog, S = cfg().stat_exog, F = cfg().futr_exog;
  MatView<T> x = x_.mat();
  for (Index p = p0; p < p1; ++p)
    for (Index w = 0; w < B; ++w) {
      T* row = x.row(p * B + w);
      row[0] = p < li                      ? in.insample_y[w * li + p]
               : in.outsample_y != nullptr ? in.outsample_y[w * hz + p - li]
                                           : T(0);  // a forecast, written by the decode
      // The exogenous values of step p + 1, the one this step forecasts; the historical ones
      // are known only within the window's inputs (zero after, as neuralforecast's).
      for (Index c = 0; c < X; ++c)
        row[1 + c] = p + 1 < li ? in.hist_exog[(w * X + c) * li + p + 1] : T(0);
      if (S > 0) std::copy_n(in.stat_exog + w * in.stat_window_stride, S, row + 1 + X);
      for (Index c = 0; c < F; ++c)
        row[1 + X + S + c] = in.futr_exog[(w * F + c) * (li + hz) + p + 1];
    }
}

template <class T, class C>
void RecurrentForecast<T, C>::project(const Ctx& ctx, ConstMat<T> s, MatView<T> o) {
  if (proj_) {
    proj_->forward(ctx, s, o);
  } else {  // the LSTM's state is its projection already
    for (Index r = 0; r < s.rows; ++r) std::copy_n(s.row(r), o.cols, o.row(r));
  }
}

template <class T, class C>
MatView<T> RecurrentForecast<T, C>::forward_teacher(const Ctx& ctx, const ForecastInputs<T>& in) {
  const Index B = in.batch, li = window_input_size(true), hz = cfg().h_train, tn = li + hz - 1,
              rw = state_width(), M = cfg().outputs;
  SHOAL_CHECK(hz == 1 || in.outsample_y != nullptr,
              "{}: recurrent=true trains on the windows' targets, which these inputs lack",
              C::kKind.name);
  profile::ZoneChain zone(ctx.profiler, B);
  zone.next(zenc_.forward);
  step_inputs(in, li, hz, 0, tn);
  encoder_.set_steps(tn);
  MatView<T> s = s_.mat().rows_block(0, tn * B);
  encoder_.forward(ctx, x_.mat().rows_block(0, tn * B), s, in.first_window);
  zone.next(zproj_.forward);
  MatView<T> o = o_.mat().rows_block(0, hz * B);
  project(ctx, ConstMat<T>(s.data + (tn - hz) * B * rw, hz * B, rw), o);
  MatView<T> out(out_.view.data, B, hz * M);
  time_major::to_windows(ConstMat<T>(o), B, hz, M, out);
  return MatView<T>(out.data, B * hz, M);
}

template <class T, class C>
void RecurrentForecast<T, C>::backward_teacher(const Ctx& ctx, const ForecastInputs<T>& in,
                                               ConstMat<T> dout) {
  const Index B = in.batch, li = window_input_size(true), hz = cfg().h_train, tn = li + hz - 1,
              rw = state_width(), M = cfg().outputs;
  profile::ZoneChain zone(ctx.profiler, B);
  zone.next(zproj_.backward);
  MatView<T> dot = do_.mat().rows_block(0, hz * B);
  time_major::to_steps(dout, B, hz, M, dot);
  MatView<T> ds = ds_.mat().rows_block(0, tn * B);
  std::fill_n(ds.data, (tn - hz) * B * rw, T(0));  // the steps no forecast reads
  const MatView<T> dlast = ds.rows_block((tn - hz) * B, hz * B);
  if (proj_)
    proj_->backward(ctx, ConstMat<T>(s_.view.data + (tn - hz) * B * rw, hz * B, rw),
                    o_.mat().rows_block(0, hz * B), dot, dlast);
  else
    for (Index r = 0; r < hz * B; ++r) std::copy_n(dot.row(r), M, dlast.row(r));
  zone.next(zenc_.backward);
  encoder_.set_steps(tn);
  encoder_.backward(ctx, x_.mat().rows_block(0, tn * B), s_.mat().rows_block(0, tn * B), ds,
                    MatView<T>{}, in.first_window);
}

// The window's inputs, then one step per forecast fed back, the encoder carrying its state from
// call to call as neuralforecast's maintain_state does.
template <class T, class C>
MatView<T> RecurrentForecast<T, C>::forward_decode(const Ctx& ctx, const ForecastInputs<T>& in) {
  const Index B = in.batch, li = window_input_size(false), H = cfg().h, rw = state_width(),
              M = cfg().outputs;
  profile::ZoneChain zone(ctx.profiler, B);
  MatView<T> out(out_.view.data, B, H * M);
  MatView<T> o = o_.mat().rows_block(0, B);
  step_inputs(in, li, H, 0, li);
  encoder_.reset_carry();
  for (Index j = 0; j < H; ++j) {
    // Steps [p0, tn): the window's inputs first, then the forecast fed back.
    const Index tn = li + j, p0 = j == 0 ? 0 : tn - 1;
    zone.next(zenc_.forward);
    encoder_.set_steps(tn - p0);
    MatView<T> s = s_.mat().rows_block(0, (tn - p0) * B);
    encoder_.forward_carry(ctx, x_.mat().rows_block(p0 * B, (tn - p0) * B), s);
    zone.next(zproj_.forward);
    project(ctx, ConstMat<T>(s.data + (tn - p0 - 1) * B * rw, B, rw), o);
    for (Index w = 0; w < B; ++w) std::copy_n(o.row(w), M, out.row(w) + j * M);
    if (j + 1 == H) break;
    // The next step's input: this forecast (the mean of a multi-output loss's M values, a
    // distribution's location) with the exogenous values of the step after it.
    step_inputs(in, li, H, tn, tn + 1);
    const Index fb = cfg().feedback_output;
    for (Index w = 0; w < B; ++w) {
      T mean = 0;
      for (Index k = 0; k < M; ++k) mean += o.row(w)[k];
      x_.mat().row(tn * B + w)[0] = fb >= 0 ? o.row(w)[fb] : mean / T(M);
    }
  }
  return MatView<T>(out.data, B * H, M);
}

template <class T, class C>
void RecurrentForecast<T, C>::register_zones(profile::Recorder& rec, int model) {
  zenc_ = block_zones(rec, model, "hist_encoder", double(cfg().input_size), encoder_,
                      /*dx=*/false);
  if (cfg().recurrent) {
    zproj_ = cost_zones(
        rec, model, "proj", double(cfg().h),
        [this](double r) { return proj_ ? proj_->forward_cost(r) : profile::Cost{}; },
        [this](double r) { return proj_ ? proj_->backward_cost(r, true) : profile::Cost{}; });
    return;
  }
  if (upsample_)
    zup_ = time_major::along_time_zones(rec, model, "upsample_sequence", *upsample_,
                                        cfg().encoder_hidden_size);
  decoder_->register_zones(rec, model);
}

}  // namespace shoal::models
