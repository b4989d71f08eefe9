#include "shoal/models/tsmixer.h"

#include <algorithm>

#include "shoal/models/zones.h"

namespace shoal::models {

template <class T>
TSMixer<T>::TSMixer(Config cfg)
    : ForecastModel(cfg),
      revin_({.n_series = cfg.n_series, .input_size = cfg.input_size, .h = cfg.h * cfg.outputs}),
      out_({.in = cfg.input_size, .out = cfg.h * cfg.outputs, .cols = cfg.n_series}) {
  const Index n = cfg_.n_series, l = cfg_.input_size;
  uint64_t s = cfg_.stream_base;
  blocks_.reserve(static_cast<size_t>(cfg_.n_block));
  for (Index b = 0; b < cfg_.n_block; ++b, s += 3)
    blocks_.push_back(
        Block{.temporal = TemporalMixing<T>(
                  {.n_series = n, .input_size = l, .dropout = cfg_.dropout, .stream = s}),
              .feature = FeatureMixing<T>({.n_series = n,
                                           .input_size = l,
                                           .ff = cfg_.ff_dim,
                                           .dropout = cfg_.dropout,
                                           .stream = s + 1})});
  x_.resize(blocks_.size() + 1);
  dx_.resize(blocks_.size() + 1);
}

// The blocks plan by rows (layers/README.md): B·L rows in, B·H·M out of the head.
template <class T>
void TSMixer<T>::plan(Planner& planner, Index max_batch) {
  set_max_batch(max_batch);
  const Index n = cfg_.n_series, rl = max_batch * cfg_.input_size;
  if (cfg_.revin) plan_layer(planner, "norm.", revin_, rl);
  for (size_t j = 0; j < blocks_.size(); ++j) {
    Block& b = blocks_[j];
    const std::string p = block_prefix(j);
    plan_layer(planner, p + "temporal_mixer.", b.temporal, rl);
    plan_layer(planner, p + "feature_mixer.", b.feature, rl);
    planner.push_scope(p + "act.");
    planner.buffer(b.xa, Region::kActivations, "xa", {rl, n});
    planner.buffer(b.dxa, Region::kActivationGrads, "dxa", {rl, n});
    planner.pop_scope();
  }
  plan_layer(planner, "out.", out_, rl);
  planner.push_scope("act.");
  for (size_t j = 0; j < x_.size(); ++j) {
    planner.buffer(x_[j], Region::kActivations, "x" + std::to_string(j), {rl, n});
    planner.buffer(dx_[j], Region::kActivationGrads, "dx" + std::to_string(j), {rl, n});
  }
  const Index rh = max_batch * cfg_.h * cfg_.outputs;
  planner.buffer(head_, Region::kActivations, "head", {rh, n});
  planner.buffer(dhead_, Region::kActivationGrads, "dhead", {rh, n});
  planner.buffer(fcst_, Region::kActivations, "forecast", {rh, n});
  planner.pop_scope();
}

template <class T>
void TSMixer<T>::register_zones(profile::Recorder& rec, int model) {
  const double l = double(cfg_.input_size), h = double(cfg_.h * cfg_.outputs);
  for (size_t k = 0; k < blocks_.size(); ++k) {
    Block& b = blocks_[k];
    const std::string p = block_prefix(k);
    b.temporal_zones = block_zones(rec, model, p + "temporal_mixer", l, b.temporal);
    b.feature_zones = block_zones(rec, model, p + "feature_mixer", l, b.feature);
  }
  norm_zones_ = cost_zones(
      rec, model, "norm", l, [&](double r) { return revin_.normalize_cost(r); },
      [&](double r) { return revin_.normalize_backward_cost(r); });
  norm_inverse_zones_ = cost_zones(
      rec, model, "norm.inverse", h, [&](double r) { return revin_.denormalize_cost(r); },
      [&](double r) { return revin_.denormalize_backward_cost(r); });
  out_zones_ = block_zones(rec, model, "out", l, out_);
}

template <class T>
MatView<T> TSMixer<T>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  check_inputs(in);
  SHOAL_CHECK(in.hist_exog == nullptr && in.futr_exog == nullptr && in.stat_exog == nullptr,
              "TSMixer does not take exogenous inputs (use TSMixerx)");
  const Index bsz = in.batch, n = cfg_.n_series, m = cfg_.outputs, rl = bsz * cfg_.input_size,
              rh = bsz * cfg_.h * m;
  ConstMat<T> y(in.insample_y, rl, n);
  MatView<T> x0 = x_[0].mat().rows_block(0, rl);
  profile::ZoneChain zone(ctx.profiler, bsz);
  zone.next(norm_zones_.forward);
  if (cfg_.revin)
    revin_.normalize(y, x0);
  else
    copy_view<T>(y, x0);
  for (size_t k = 0; k < blocks_.size(); ++k) {
    Block& b = blocks_[k];
    MatView<T> xa = b.xa.mat().rows_block(0, rl);
    zone.next(b.temporal_zones.forward);
    b.temporal.forward(ctx, x_[k].mat().rows_block(0, rl), xa);
    zone.next(b.feature_zones.forward);
    b.feature.forward(ctx, xa, x_[k + 1].mat().rows_block(0, rl));
  }
  MatView<T> head = head_.mat().rows_block(0, rh);
  zone.next(out_zones_.forward);
  out_.forward(ctx, x_.back().mat().rows_block(0, rl), head);
  MatView<T> fc = head;
  if (cfg_.revin) {
    fc = fcst_.mat().rows_block(0, rh);
    zone.next(norm_inverse_zones_.forward);
    revin_.denormalize(head, fc);
  }
  // [B·H·M, N] is neuralforecast's [B, H, M·N].
  return MatView<T>(fc.data, bsz * cfg_.h, m * n);
}

template <class T>
void TSMixer<T>::backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout) {
  const Index bsz = in.batch, n = cfg_.n_series, m = cfg_.outputs, rl = bsz * cfg_.input_size,
              rh = bsz * cfg_.h * m;
  SHOAL_DCHECK(dout.rows == bsz * cfg_.h && dout.cols == m * n && dout.contiguous());
  const ConstMat<T> dfc(dout.data, rh, n);
  ConstMat<T> dhead = dfc;
  profile::ZoneChain zone(ctx.profiler, bsz);
  if (cfg_.revin) {
    zone.next(norm_inverse_zones_.backward);
    revin_.denormalize_backward(head_.mat().rows_block(0, rh), dfc, dhead_.mat().rows_block(0, rh));
    dhead = dhead_.mat().rows_block(0, rh);
  }
  const bool need_dx0 = cfg_.revin;
  auto dx_of = [&](size_t k) {
    return k == 0 && !need_dx0 ? MatView<T>{} : dx_[k].mat().rows_block(0, rl);
  };
  zone.next(out_zones_.backward);
  out_.backward(ctx, x_.back().mat().rows_block(0, rl), head_.mat().rows_block(0, rh), dhead,
                dx_of(blocks_.size()), false);
  for (size_t k = blocks_.size(); k-- > 0;) {
    Block& b = blocks_[k];
    MatView<T> xa = b.xa.mat().rows_block(0, rl), dxa = b.dxa.mat().rows_block(0, rl);
    zone.next(b.feature_zones.backward);
    b.feature.backward(ctx, xa, dx_[k + 1].mat().rows_block(0, rl), dxa);
    zone.next(b.temporal_zones.backward);
    b.temporal.backward(ctx, x_[k].mat().rows_block(0, rl), dxa, dx_of(k));
  }
  zone.next(norm_zones_.backward);
  if (cfg_.revin)
    revin_.normalize_backward(ConstMat<T>(in.insample_y, rl, n), dx_[0].mat().rows_block(0, rl));
}

template class TSMixer<float>;
template class TSMixer<double>;

}  // namespace shoal::models
