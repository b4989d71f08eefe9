#include "shoal/models/tsmixer.h"

#include <algorithm>

namespace shoal::models {

template <class T>
TSMixer<T>::TSMixer(Config cfg)
    : cfg_(cfg),
      revin_({.n_series = cfg.n_series}),
      out_({.in = cfg.input_size, .out = cfg.h, .cols = cfg.n_series}) {
  SHOAL_CHECK(cfg_.h > 0 && cfg_.input_size > 0 && cfg_.n_series > 0 && cfg_.ff_dim > 0,
              "TSMixer needs h, input_size, n_series, ff_dim > 0, got {} {} {} {}", cfg_.h,
              cfg_.input_size, cfg_.n_series, cfg_.ff_dim);
  SHOAL_CHECK(cfg_.n_block >= 0, "TSMixer n_block must be >= 0, got {}", cfg_.n_block);
  SHOAL_CHECK(cfg_.dropout >= 0 && cfg_.dropout < 1, "TSMixer dropout must be in [0, 1), got {}",
              cfg_.dropout);
  const Index n = cfg_.n_series, l = cfg_.input_size, k = cfg_.ff_dim;
  using BN = layers::BatchNorm1d<T>;
  using Lin = layers::Linear<T>;
  using Drop = layers::Dropout<T>;
  const typename BN::Config bn{.num_features = n * l, .eps = 1e-3, .momentum = 0.01};
  uint64_t s = cfg_.stream_base;
  blocks_.reserve(static_cast<size_t>(cfg_.n_block));
  for (Index b = 0; b < cfg_.n_block; ++b, s += 3)
    blocks_.push_back(Block{.tnorm = BN(bn),
                            .fnorm = BN(bn),
                            .tlin = Lin({.in = l, .out = l, .act = kernels::Act::kRelu}),
                            .flin1 = Lin({.in = n, .out = k, .act = kernels::Act::kRelu}),
                            .flin2 = Lin({.in = k, .out = n}),
                            .tdrop = Drop({.p = cfg_.dropout, .stream = s}),
                            .fdrop1 = Drop({.p = cfg_.dropout, .stream = s + 1}),
                            .fdrop2 = Drop({.p = cfg_.dropout, .stream = s + 2})});
  x_.resize(blocks_.size() + 1);
  dx_.resize(blocks_.size() + 1);
}

template <class T>
Index TSMixer<T>::num_params() {
  Index total = 0;
  for_each_param([&](const std::string&, Param<T>& p) { total += p.shape.numel(); });
  return total;
}

template <class T>
void TSMixer<T>::plan(Planner& planner, Index max_batch) {
  SHOAL_CHECK(max_batch > 0, "TSMixer max_batch must be > 0, got {}", max_batch);
  max_batch_ = max_batch;
  const Index n = cfg_.n_series, l = cfg_.input_size, k = cfg_.ff_dim, rl = max_batch * l;
  auto scoped = [&](const std::string& prefix, auto& layer, Index rows) {
    planner.push_scope(prefix);
    layer.plan(planner, rows);
    planner.pop_scope();
  };
  if (cfg_.revin) scoped("norm.", revin_, max_batch);
  for (size_t j = 0; j < blocks_.size(); ++j) {
    Block& b = blocks_[j];
    const std::string p = "mixing_layers." + std::to_string(j) + ".";
    scoped(p + "temporal_mixer.temporal_norm.", b.tnorm, max_batch);
    scoped(p + "temporal_mixer.temporal_lin.", b.tlin, max_batch * n);
    scoped(p + "feature_mixer.feature_norm.", b.fnorm, max_batch);
    scoped(p + "feature_mixer.feature_lin_1.", b.flin1, rl);
    scoped(p + "feature_mixer.feature_lin_2.", b.flin2, rl);
    b.tdrop.plan(planner, rl);
    b.fdrop1.plan(planner, rl);
    b.fdrop2.plan(planner, rl);
    planner.push_scope(p + "act.");
    const auto act = [&](Buffer<T>& buf, const char* name, Index r, Index c) {
      planner.buffer(buf, Region::kActivations, name, {r, c});
    };
    const auto grad = [&](Buffer<T>& buf, const char* name, Index r, Index c) {
      planner.buffer(buf, Region::kActivationGrads, name, {r, c});
    };
    const Index rn = max_batch * n;
    act(b.tt, "tt", rn, l), act(b.tu, "tu", rn, l), act(b.tv, "tv", rn, l);
    grad(b.dtt, "dtt", rn, l), grad(b.dtu, "dtu", rn, l), grad(b.dtv, "dtv", rn, l);
    act(b.tw, "tw", rl, n), act(b.xa, "xa", rl, n), act(b.fb, "fb", rl, n);
    act(b.f1, "f1", rl, k), act(b.f2, "f2", rl, n);
    grad(b.dtw, "dtw", rl, n), grad(b.dxa, "dxa", rl, n), grad(b.dfb, "dfb", rl, n);
    grad(b.df1, "df1", rl, k), grad(b.df2, "df2", rl, n), grad(b.dtmp, "dtmp", rl, n);
    planner.pop_scope();
  }
  scoped("out.", out_, max_batch);
  planner.push_scope("act.");
  for (size_t j = 0; j < x_.size(); ++j) {
    planner.buffer(x_[j], Region::kActivations, "x" + std::to_string(j), {rl, n});
    planner.buffer(dx_[j], Region::kActivationGrads, "dx" + std::to_string(j), {rl, n});
  }
  planner.buffer(head_, Region::kActivations, "head", {max_batch * cfg_.h, n});
  planner.buffer(dhead_, Region::kActivationGrads, "dhead", {max_batch * cfg_.h, n});
  planner.buffer(fcst_, Region::kActivations, "forecast", {max_batch * cfg_.h, n});
  planner.pop_scope();
}

template <class T>
void TSMixer<T>::init(RngStream& rng) {
  if (cfg_.revin) revin_.init(rng);
  for (Block& b : blocks_) {
    b.tnorm.init(rng);
    b.tlin.init(rng);
    b.fnorm.init(rng);
    b.flin1.init(rng);
    b.flin2.init(rng);
  }
  out_.init(rng);
}

template <class T>
void TSMixer<T>::forward_block(const Ctx& ctx, Block& b, ConstMat<T> x, MatView<T> y, Index bsz) {
  const Index n = cfg_.n_series, l = cfg_.input_size, rl = bsz * l, rn = bsz * n;
  auto rows = [](const Buffer<T>& buf, Index r) { return buf.mat().rows_block(0, r); };
  // [B, N·L] or [B, L·N]: one row per window, as BatchNorm1d sees it.
  auto wins = [&](const Buffer<T>& buf, Index bs) { return MatView<T>(buf.view.data, bs, n * l); };
  profile::ZoneChain zone(ctx.profiler, bsz);
  zone.next(b.temporal_zones.forward);
  // Temporal half on the per-window transpose [B·N, L] = [B, N·L].
  transpose_windows<T>(x, rows(b.tt, rn), bsz, false);
  b.tnorm.forward(ctx, wins(b.tt, bsz), wins(b.tu, bsz));
  b.tlin.forward(ctx, rows(b.tu, rn), rows(b.tv, rn));
  MatView<T> tw = rows(b.tw, rl), xa = rows(b.xa, rl);
  transpose_windows<T>(rows(b.tv, rn), tw, bsz, false);
  b.tdrop.forward(ctx, tw, tw);
  for (Index r = 0; r < rl; ++r)
    for (Index j = 0; j < n; ++j) xa(r, j) = tw(r, j) + x(r, j);
  zone.next(b.feature_zones.forward);
  // Feature half on [B·L, N] = [B, L·N].
  b.fnorm.forward(ctx, wins(b.xa, bsz), wins(b.fb, bsz));
  MatView<T> f1 = rows(b.f1, rl), f2 = rows(b.f2, rl);
  b.flin1.forward(ctx, rows(b.fb, rl), f1);
  b.fdrop1.forward(ctx, f1, f1);  // in place: ReLU backward only needs the sign of a kept value
  b.flin2.forward(ctx, f1, f2);
  b.fdrop2.forward(ctx, f2, f2);
  for (Index r = 0; r < rl; ++r)
    for (Index j = 0; j < n; ++j) y(r, j) = f2(r, j) + xa(r, j);
}

template <class T>
void TSMixer<T>::backward_block(const Ctx& ctx, Block& b, ConstMat<T> /*x*/, ConstMat<T> dy,
                                MatView<T> dx, Index bsz) {
  const Index n = cfg_.n_series, l = cfg_.input_size, rl = bsz * l, rn = bsz * n;
  auto rows = [](const Buffer<T>& buf, Index r) { return buf.mat().rows_block(0, r); };
  // [B, N·L] or [B, L·N]: one row per window, as BatchNorm1d sees it.
  auto wins = [&](const Buffer<T>& buf, Index bs) { return MatView<T>(buf.view.data, bs, n * l); };
  MatView<T> f1 = rows(b.f1, rl), f2 = rows(b.f2, rl), df1 = rows(b.df1, rl), df2 = rows(b.df2, rl),
             dxa = rows(b.dxa, rl);
  profile::ZoneChain zone(ctx.profiler, bsz);
  zone.next(b.feature_zones.backward);
  b.fdrop2.backward(ctx, f2, f2, dy, df2);
  b.flin2.backward(ctx, f1, f2, df2, df1);
  b.fdrop1.backward(ctx, f1, f1, df1, df1);
  b.flin1.backward(ctx, rows(b.fb, rl), f1, df1, rows(b.dfb, rl));
  b.fnorm.backward(ctx, wins(b.xa, bsz), wins(b.fb, bsz), wins(b.dfb, bsz), wins(b.dtmp, bsz));
  MatView<T> dtmp = rows(b.dtmp, rl);
  for (Index r = 0; r < rl; ++r)
    for (Index j = 0; j < n; ++j) dxa(r, j) = dy(r, j) + dtmp(r, j);
  MatView<T> dtw = rows(b.dtw, rl);
  zone.next(b.temporal_zones.backward);
  b.tdrop.backward(ctx, rows(b.tw, rl), rows(b.tw, rl), dxa, dtw);
  transpose_windows<T>(dtw, rows(b.dtv, rn), bsz, false);
  b.tlin.backward(ctx, rows(b.tu, rn), rows(b.tv, rn), rows(b.dtv, rn), rows(b.dtu, rn));
  b.tnorm.backward(ctx, wins(b.tt, bsz), wins(b.tu, bsz), wins(b.dtu, bsz), wins(b.dtt, bsz));
  if (dx.data == nullptr) return;
  copy_view<T>(dxa, dx);
  transpose_windows<T>(rows(b.dtt, rn), dx, bsz, true);
}

template <class T>
MatView<T> TSMixer<T>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  SHOAL_CHECK(in.batch > 0 && in.batch <= max_batch_, "TSMixer: batch {} outside [1, {}]", in.batch,
              max_batch_);
  SHOAL_CHECK(in.insample_y != nullptr, "TSMixer: insample_y missing");
  SHOAL_CHECK(in.hist_exog == nullptr && in.futr_exog == nullptr && in.stat_exog == nullptr,
              "TSMixer does not take exogenous inputs (use TSMixerx)");
  const Index bsz = in.batch, n = cfg_.n_series, rl = bsz * cfg_.input_size, rh = bsz * cfg_.h;
  ConstMat<T> y(in.insample_y, rl, n);
  MatView<T> x0 = x_[0].mat().rows_block(0, rl);
  profile::ZoneChain zone(ctx.profiler, bsz);
  zone.next(norm_zones_.forward);
  if (cfg_.revin)
    revin_.normalize(y, x0, bsz);
  else
    copy_view<T>(y, x0);
  zone.close();
  for (size_t k = 0; k < blocks_.size(); ++k)
    forward_block(ctx, blocks_[k], x_[k].mat().rows_block(0, rl), x_[k + 1].mat().rows_block(0, rl),
                  bsz);
  MatView<T> head = head_.mat().rows_block(0, rh);
  zone.next(out_zones_.forward);
  out_.forward(ctx, x_.back().mat().rows_block(0, rl), head, bsz);
  if (!cfg_.revin) return head;
  MatView<T> fc = fcst_.mat().rows_block(0, rh);
  zone.next(norm_inverse_zones_.forward);
  revin_.denormalize(head, fc, bsz);
  return fc;
}

template <class T>
void TSMixer<T>::backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout) {
  const Index bsz = in.batch, n = cfg_.n_series, rl = bsz * cfg_.input_size, rh = bsz * cfg_.h;
  SHOAL_DCHECK(dout.rows == rh && dout.cols == n);
  ConstMat<T> dhead = dout;
  profile::ZoneChain zone(ctx.profiler, bsz);
  if (cfg_.revin) {
    zone.next(norm_inverse_zones_.backward);
    revin_.denormalize_backward(head_.mat().rows_block(0, rh), dout, dhead_.mat().rows_block(0, rh),
                                bsz);
    dhead = dhead_.mat().rows_block(0, rh);
  }
  const bool need_dx0 = cfg_.revin;
  auto dx_of = [&](size_t k) {
    return k == 0 && !need_dx0 ? MatView<T>{} : dx_[k].mat().rows_block(0, rl);
  };
  zone.next(out_zones_.backward);
  out_.backward(ctx, x_.back().mat().rows_block(0, rl), head_.mat().rows_block(0, rh), dhead,
                dx_of(blocks_.size()), bsz, false);
  zone.close();
  for (size_t k = blocks_.size(); k-- > 0;)
    backward_block(ctx, blocks_[k], x_[k].mat().rows_block(0, rl),
                   dx_[k + 1].mat().rows_block(0, rl), dx_of(k), bsz);
  zone.next(norm_zones_.backward);
  if (cfg_.revin)
    revin_.normalize_backward(ConstMat<T>(in.insample_y, rl, n), dx_[0].mat().rows_block(0, rl),
                              bsz);
}

template class TSMixer<float>;
template class TSMixer<double>;

}  // namespace shoal::models
