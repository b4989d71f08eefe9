// Internal to src/shoal/models: the definitions of models/context_forecast.h, instantiated by
// each model's source (tcn.cpp, dilated_rnn.cpp) for its own Config.
#pragma once

#include <string>

#include "shoal/models/context_forecast.h"
#include "shoal/models/zones.h"
#include "time_major.h"

namespace shoal::models {

template <class T, class C>
ContextForecast<T, C>::ContextForecast(Config c)
    : Base(c),
      encoder_(c.template encoder_config<T>(encoder_in())),
      context_({.in = c.input_size, .out = c.h}),
      decoder_(c.mlp_decoder_config(c, c.encoder_hidden_size)) {}

template <class T, class C>
void ContextForecast<T, C>::plan(Planner& planner, Index max_batch) {
  Base::set_max_batch(max_batch);
  const Index B = max_batch, L = cfg().input_size, H = cfg().h, hd = cfg().encoder_hidden_size;
  plan_layer(planner, std::string(C::kEncoderName) + ".", encoder_, L * B);
  plan_layer(planner, "context_adapter.", context_, 0 + 1);  // runs along time (forward)
  decoder_.plan(planner, B);
  planner.buffer(x_, Region::kActivations, "x", {L * B, encoder_in()});
  planner.buffer(s_, Region::kActivations, "s", {L * B, hd});
  planner.buffer(ds_, Region::kActivationGrads, "ds", {L * B, hd});
  planner.buffer(u_, Region::kActivations, "u", {H * B, hd});
  planner.buffer(du_, Region::kActivationGrads, "du", {H * B, hd});
}

template <class T, class C>
MatView<T> ContextForecast<T, C>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  Base::check_inputs(in);
  const Index B = in.batch, L = cfg().input_size, H = cfg().h, hd = cfg().encoder_hidden_size;
  profile::ZoneChain zone(ctx.profiler, B);
  zone.next(zenc_.forward);
  MatView<T> x = x_.mat().rows_block(0, L * B);
  time_major::encoder_input(in, L, H, cfg().hist_exog, cfg().stat_exog, cfg().futr_exog, x);
  MatView<T> s = s_.mat().rows_block(0, L * B);
  encoder_.forward(ctx, x, s);
  zone.next(zctx_.forward);
  time_major::along_time(context_, s.data, B * hd, u_.view.data);
  zone.next(decoder_.zones().forward);
  return decoder_.forward(ctx, in, u_.mat().rows_block(0, H * B));
}

template <class T, class C>
void ContextForecast<T, C>::backward(const Ctx& ctx, const ForecastInputs<T>& in,
                                     ConstMat<T> dout) {
  const Index B = in.batch, L = cfg().input_size, H = cfg().h, hd = cfg().encoder_hidden_size;
  profile::ZoneChain zone(ctx.profiler, B);
  zone.next(decoder_.zones().backward);
  const MatView<T> du = du_.mat().rows_block(0, H * B);
  decoder_.backward(ctx, in, u_.mat().rows_block(0, H * B), dout, du);
  zone.next(zctx_.backward);
  MatView<T> ds = ds_.mat().rows_block(0, L * B);
  time_major::along_time_backward(context_, s_.view.data, du.data, B * hd, ds.data);
  zone.next(zenc_.backward);
  // The encoder's input is data: no input gradient.
  encoder_.backward(ctx, x_.mat().rows_block(0, L * B), s_.mat().rows_block(0, L * B), ds,
                    MatView<T>{});
}

template <class T, class C>
void ContextForecast<T, C>::register_zones(profile::Recorder& rec, int model) {
  zenc_ = block_zones(rec, model, std::string(C::kEncoderName), double(cfg().input_size), encoder_,
                      /*dx=*/false);
  zctx_ = time_major::along_time_zones(rec, model, "context_adapter", context_,
                                       cfg().encoder_hidden_size);
  decoder_.register_zones(rec, model);
}

}  // namespace shoal::models
