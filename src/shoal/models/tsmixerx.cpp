#include "shoal/models/tsmixerx.h"

#include <algorithm>

#include "shoal/models/zones.h"

namespace shoal::models {

template <class T>
TSMixerx<T>::TSMixerx(Config cfg)
    : ForecastModel(cfg),
      revin_({.n_series = cfg.n_series, .input_size = cfg.input_size, .h = cfg.h * cfg.outputs}),
      projection_({.in = cfg.input_size, .out = cfg.h, .cols = c0() * cfg.n_series}),
      out_({.in = cfg.ff_dim, .out = cfg.outputs * cfg.n_series}) {
  const Index n = cfg_.n_series, k = cfg_.ff_dim, h = cfg_.h;
  uint64_t stream = cfg_.stream_base;
  auto fm = [&](Index in, Index out) {
    auto p = std::make_unique<FeatureMixingX<T>>(typename FeatureMixingX<T>::Config{
        .in = in, .out = out, .h = h, .ff = k, .dropout = cfg_.dropout, .stream = stream});
    stream += 2;
    return p;
  };
  auto tm = [&](Index cols) {
    auto p = std::make_unique<TemporalMixingX<T>>(typename TemporalMixingX<T>::Config{
        .cols = cols, .h = h, .dropout = cfg_.dropout, .stream = stream});
    stream += 1;
    return p;
  };
  fm_hist_ = fm(n * c0(), k);
  Index m = 1;
  if (cfg_.futr_exog > 0) fm_futr_ = fm(n * cfg_.futr_exog, k), ++m;
  if (cfg_.stat_exog > 0) fm_stat_ = fm(n * cfg_.stat_exog, k), ++m;
  const bool stat = cfg_.stat_exog > 0;
  mixers_.resize(static_cast<size_t>(cfg_.n_block + 1));
  for (size_t j = 0; j < mixers_.size(); ++j) {
    Mixer& mx = mixers_[j];
    mx.cols = j == 0 ? m * k : (stat ? 2 * k : k);
    if (j > 0 && stat) mx.stat = fm(n * cfg_.stat_exog, k);
    mx.temporal = tm(mx.cols);
    mx.feature = fm(mx.cols, k);
  }
  io_.resize(mixers_.size() + 1);
  dio_.resize(mixers_.size() + 1);
  tm_.resize(mixers_.size());
  dtm_.resize(mixers_.size());
}

// The blocks plan by rows (layers/README.md): B·L rows into RevIN and the projection, B·H
// through the mixers and the head.
template <class T>
void TSMixerx<T>::plan(Planner& planner, Index max_batch) {
  set_max_batch(max_batch);
  const Index n = cfg_.n_series, k = cfg_.ff_dim, rl = max_batch * cfg_.input_size,
              rh = max_batch * cfg_.h;
  // Registration order is neuralforecast's module order (state_dict order).
  if (cfg_.revin) plan_layer(planner, "norm.", revin_, rl);
  plan_layer(planner, "temporal_projection.", projection_, rl);
  plan_layer(planner, "feature_mixer_hist.", *fm_hist_, rh);
  if (fm_futr_) plan_layer(planner, "feature_mixer_futr.", *fm_futr_, rh);
  if (fm_stat_) plan_layer(planner, "feature_mixer_stat.", *fm_stat_, rh);
  for (size_t j = 0; j < mixers_.size(); ++j) {
    const std::string p = mixer_prefix(j);
    if (mixers_[j].stat) plan_layer(planner, p + "feature_mixer_stat.", *mixers_[j].stat, rh);
    plan_layer(planner, p + "temporal_mixer.", *mixers_[j].temporal, rh);
    plan_layer(planner, p + "feature_mixer.", *mixers_[j].feature, rh);
  }
  plan_layer(planner, "out.", out_, rh);

  planner.push_scope("act.");
  planner.buffer(xin_, Region::kActivations, "xin", {rl, c0() * n});
  planner.buffer(dxin_, Region::kActivationGrads, "dxin", {rl, c0() * n});
  planner.buffer(proj_, Region::kActivations, "proj", {rh, c0() * n});
  planner.buffer(dproj_, Region::kActivationGrads, "dproj", {rh, c0() * n});
  if (cfg_.futr_exog > 0)
    planner.buffer(xfutr_, Region::kActivations, "xfutr", {rh, cfg_.futr_exog * n});
  if (cfg_.stat_exog > 0)
    planner.buffer(xstat_, Region::kActivations, "xstat", {rh, cfg_.stat_exog * n});
  if (cfg_.exog_grads) {
    const Index nx = cfg_.hist_exog, nf = cfg_.futr_exog, ns = cfg_.stat_exog;
    if (nx > 0)
      planner.buffer(dhist_, Region::kActivationGrads, "dhist_exog",
                     {max_batch, nx, cfg_.input_size, n});
    if (nf > 0) {
      planner.buffer(dxfutr_, Region::kActivationGrads, "dxfutr", {rh, nf * n});
      planner.buffer(dfutr_, Region::kActivationGrads, "dfutr_exog",
                     {max_batch, nf, cfg_.input_size + cfg_.h, n});
    }
    if (ns > 0) {
      planner.buffer(dxstat_, Region::kActivationGrads, "dxstat", {rh, ns * n});
      planner.buffer(dstat_, Region::kActivationGrads, "dstat_exog", {n, ns});
    }
  }
  for (size_t j = 0; j < io_.size(); ++j) {
    const Index cols = j < mixers_.size() ? mixers_[j].cols : k;
    planner.buffer(io_[j], Region::kActivations, "io" + std::to_string(j), {rh, cols});
    planner.buffer(dio_[j], Region::kActivationGrads, "dio" + std::to_string(j), {rh, cols});
  }
  for (size_t j = 0; j < tm_.size(); ++j) {
    planner.buffer(tm_[j], Region::kActivations, "tm" + std::to_string(j), {rh, mixers_[j].cols});
    planner.buffer(dtm_[j], Region::kActivationGrads, "dtm" + std::to_string(j),
                   {rh, mixers_[j].cols});
  }
  const Index mn = cfg_.outputs * n;
  planner.buffer(head_, Region::kActivations, "head", {rh, mn});
  planner.buffer(dhead_, Region::kActivationGrads, "dhead", {rh, mn});
  planner.buffer(fcst_, Region::kActivations, "forecast", {rh, mn});
  planner.pop_scope();
}

template <class T>
void TSMixerx<T>::check_inputs(const ForecastInputs<T>& in) const {
  ForecastModel::check_inputs(in);
  SHOAL_CHECK((cfg_.hist_exog > 0) == (in.hist_exog != nullptr),
              "TSMixerx: hist_exog given iff hist_exog > 0 ({})", cfg_.hist_exog);
  SHOAL_CHECK((cfg_.futr_exog > 0) == (in.futr_exog != nullptr),
              "TSMixerx: futr_exog given iff futr_exog > 0 ({})", cfg_.futr_exog);
  SHOAL_CHECK((cfg_.stat_exog > 0) == (in.stat_exog != nullptr),
              "TSMixerx: stat_exog given iff stat_exog > 0 ({})", cfg_.stat_exog);
}

template <class T>
void TSMixerx<T>::pack_inputs(const ForecastInputs<T>& in) {
  const Index bsz = in.batch, n = cfg_.n_series, l = cfg_.input_size, h = cfg_.h;
  const Index nx = cfg_.hist_exog, nf = cfg_.futr_exog, ns = cfg_.stat_exog;
  MatView<T> xin = rows(xin_, bsz * l);
  ConstMat<T> y(in.insample_y, bsz * l, n);
  if (cfg_.revin)
    revin_.normalize(y, xin.cols_block(0, n));
  else
    copy_view<T>(y, xin.cols_block(0, n));
  // Channel c of window b, step t lands in column c·N + n of row b·L + t, as neuralforecast
  // reshapes them.
  for (Index b = 0; b < bsz; ++b)
    for (Index t = 0; t < l; ++t) {
      T* dst = xin.row(b * l + t);
      for (Index x = 0; x < nx; ++x)
        std::copy_n(in.hist_exog + ((b * nx + x) * l + t) * n, n, dst + (1 + x) * n);
      for (Index f = 0; f < nf; ++f)
        std::copy_n(in.futr_exog + ((b * nf + f) * (l + h) + t) * n, n, dst + (1 + nx + f) * n);
    }
  if (nf > 0) {
    MatView<T> xf = rows(xfutr_, bsz * h);
    for (Index b = 0; b < bsz; ++b)
      for (Index t = 0; t < h; ++t)
        for (Index f = 0; f < nf; ++f)
          std::copy_n(in.futr_exog + ((b * nf + f) * (l + h) + l + t) * n, n,
                      xf.row(b * h + t) + f * n);
  }
  if (ns > 0) {
    MatView<T> xs = rows(xstat_, bsz * h);
    for (Index r = 0; r < bsz * h; ++r) std::copy_n(in.stat_exog, n * ns, xs.row(r));
  }
}

template <class T>
MatView<T> TSMixerx<T>::mixer_out(size_t j, Index nrows) const {
  return rows(io_[j + 1], nrows).cols_block(0, cfg_.ff_dim);
}
template <class T>
MatView<T> TSMixerx<T>::mixer_dout(size_t j, Index nrows) const {
  return rows(dio_[j + 1], nrows).cols_block(0, cfg_.ff_dim);
}

template <class T>
bool TSMixerx<T>::stat_shared(const Ctx& ctx) const {
  return !(ctx.training && cfg_.dropout > 0);
}

// Every row of the broadcast static input is the same, so without dropout a static mixer's
// output is the same for every window: run it on one window and copy that to the others. Its
// backward is linear in dy, so the windows' dy are summed first and one window is back-propagated
// (the same gradient up to the order of the sums). With dropout each window has its own masks.
template <class T>
void TSMixerx<T>::stat_forward(const Ctx& ctx, FeatureMixingX<T>& fm, MatView<T> y, Index bsz,
                               Index row0) {
  const Index h = cfg_.h;
  if (!stat_shared(ctx)) return fm.forward(ctx, rows(xstat_, bsz * h), y, row0);
  MatView<T> first = y.rows_block(0, h);
  fm.forward(ctx, rows(xstat_, h), first, row0);
  for (Index b = 1; b < bsz; ++b) copy_view<T>(first, y.rows_block(b * h, h));
}

template <class T>
void TSMixerx<T>::stat_backward(const Ctx& ctx, FeatureMixingX<T>& fm, MatView<T> dy, Index bsz,
                                Index row0) {
  const Index h = cfg_.h;
  // The static input's gradient: every row of the broadcast input is the one [N·S] row.
  auto sum_rows = [&](ConstMat<T> dx) {
    T* g = dstat_.view.data;
    for (Index r = 0; r < dx.rows; ++r) {
      const T* d = dx.row(r);
      for (Index c = 0; c < dx.cols; ++c) g[c] += d[c];
    }
  };
  const bool dx = cfg_.exog_grads;
  if (!stat_shared(ctx)) {
    const MatView<T> d = dx ? rows(dxstat_, bsz * h) : MatView<T>{};
    fm.backward(ctx, rows(xstat_, bsz * h), dy, d, row0);
    if (dx) sum_rows(d);
    return;
  }
  MatView<T> first = dy.rows_block(0, h);  // dy is this mixer's alone: sum into it in place
  for (Index b = 1; b < bsz; ++b) add_into<T>(dy.rows_block(b * h, h), first);
  const MatView<T> d = dx ? rows(dxstat_, h) : MatView<T>{};
  fm.backward(ctx, rows(xstat_, h), first, d, row0);
  if (dx) sum_rows(d);
}

template <class T>
void TSMixerx<T>::unpack_exog_grads(Index bsz) {
  const Index n = cfg_.n_series, l = cfg_.input_size, h = cfg_.h;
  const Index nx = cfg_.hist_exog, nf = cfg_.futr_exog;
  const ConstMat<T> dxin = rows(dxin_, bsz * l);
  T* dh = dhist_.view.data;
  T* df = dfutr_.view.data;
  for (Index b = 0; b < bsz; ++b)
    for (Index t = 0; t < l; ++t) {
      const T* src = dxin.row(b * l + t);
      for (Index x = 0; x < nx; ++x)
        std::copy_n(src + (1 + x) * n, n, dh + ((b * nx + x) * l + t) * n);
      for (Index f = 0; f < nf; ++f)
        std::copy_n(src + (1 + nx + f) * n, n, df + ((b * nf + f) * (l + h) + t) * n);
    }
  if (nf > 0) {
    const ConstMat<T> dxf = rows(dxfutr_, bsz * h);
    for (Index b = 0; b < bsz; ++b)
      for (Index t = 0; t < h; ++t)
        for (Index f = 0; f < nf; ++f)
          std::copy_n(dxf.row(b * h + t) + f * n, n, df + ((b * nf + f) * (l + h) + l + t) * n);
  }
}

template <class T>
ExogGrads<T> TSMixerx<T>::exog_grads() const {
  SHOAL_CHECK(cfg_.exog_grads, "TSMixerx: exog_grads() needs a model built with exog_grads");
  return {.hist = cfg_.hist_exog > 0 ? dhist_.view.data : nullptr,
          .futr = cfg_.futr_exog > 0 ? dfutr_.view.data : nullptr,
          .stat = cfg_.stat_exog > 0 ? dstat_.view.data : nullptr};
}

template <class T>
MatView<T> TSMixerx<T>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  check_inputs(in);
  const Index bsz = in.batch, rh = bsz * cfg_.h, k = cfg_.ff_dim, row0 = in.first_window * cfg_.h;
  profile::ZoneChain zone(profiler(ctx), bsz);
  zone.next(zones_.norm.forward);
  pack_inputs(in);
  zone.next(zones_.projection.forward);
  projection_.forward(ctx, rows(xin_, bsz * cfg_.input_size), rows(proj_, rh));
  MatView<T> z0 = rows(io_[0], rh);
  Index col = 0;
  zone.next(zones_.fm_hist.forward);
  fm_hist_->forward(ctx, rows(proj_, rh), z0.cols_block(col, k), row0), col += k;
  zone.next(zones_.fm_futr.forward);
  if (fm_futr_) fm_futr_->forward(ctx, rows(xfutr_, rh), z0.cols_block(col, k), row0), col += k;
  // A shared static mixer runs on one window (stat_forward): its zone counts one window's FLOPs.
  const auto stat_rows = static_cast<uint32_t>(stat_shared(ctx) ? 1 : bsz);
  zone.next(zones_.fm_stat.forward, stat_rows);
  if (fm_stat_) stat_forward(ctx, *fm_stat_, z0.cols_block(col, k), bsz, row0);
  for (size_t j = 0; j < mixers_.size(); ++j) {
    Mixer& mx = mixers_[j];
    zone.next(zones_.mixer(j).stat.forward, stat_rows);
    if (mx.stat) stat_forward(ctx, *mx.stat, rows(io_[j], rh).cols_block(k, k), bsz, row0);
    zone.next(zones_.mixer(j).temporal.forward);
    mx.temporal->forward(ctx, rows(io_[j], rh), rows(tm_[j], rh), row0);
    zone.next(zones_.mixer(j).feature.forward);
    mx.feature->forward(ctx, rows(tm_[j], rh), mixer_out(j, rh), row0);
  }
  zone.next(zones_.out.forward);
  out_.forward(ctx, rows(io_.back(), rh), rows(head_, rh));
  if (!cfg_.revin) return rows(head_, rh);
  zone.next(zones_.norm_inverse.forward);
  revin_.denormalize(by_series(head_, rh), by_series(fcst_, rh));
  return rows(fcst_, rh);
}

template <class T>
void TSMixerx<T>::backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout) {
  const Index bsz = in.batch, rh = bsz * cfg_.h, k = cfg_.ff_dim, n = cfg_.n_series,
              row0 = in.first_window * cfg_.h;
  const Index m = cfg_.outputs;
  SHOAL_DCHECK(dout.rows == rh && dout.cols == m * n && dout.contiguous());
  ConstMat<T> dhead = dout;
  profile::ZoneChain zone(profiler(ctx), bsz);
  const auto stat_rows = static_cast<uint32_t>(stat_shared(ctx) ? 1 : bsz);  // as in forward
  if (cfg_.exog_grads && cfg_.stat_exog > 0)  // the static mixers add into it
    std::fill_n(dstat_.view.data, n * cfg_.stat_exog, T(0));
  if (cfg_.revin) {
    zone.next(zones_.norm_inverse.backward);
    revin_.denormalize_backward(by_series(head_, rh), ConstMat<T>(dout.data, rh * m, n),
                                by_series(dhead_, rh));
    dhead = rows(dhead_, rh);
  }
  zone.next(zones_.out.backward);
  out_.backward(ctx, rows(io_.back(), rh), rows(head_, rh), dhead, rows(dio_.back(), rh));
  for (size_t j = mixers_.size(); j-- > 0;) {
    Mixer& mx = mixers_[j];
    zone.next(zones_.mixer(j).feature.backward);
    mx.feature->backward(ctx, rows(tm_[j], rh), mixer_dout(j, rh), rows(dtm_[j], rh), row0);
    zone.next(zones_.mixer(j).temporal.backward);
    mx.temporal->backward(ctx, rows(io_[j], rh), rows(dtm_[j], rh), rows(dio_[j], rh), row0);
    zone.next(zones_.mixer(j).stat.backward, stat_rows);
    if (mx.stat) stat_backward(ctx, *mx.stat, rows(dio_[j], rh).cols_block(k, k), bsz, row0);
  }
  MatView<T> dz0 = rows(dio_[0], rh);
  Index col = 0;
  MatView<T> dproj = rows(dproj_, rh);
  zone.next(zones_.fm_hist.backward);
  fm_hist_->backward(ctx, rows(proj_, rh), dz0.cols_block(col, k), dproj, row0), col += k;
  zone.next(zones_.fm_futr.backward);
  if (fm_futr_)
    fm_futr_->backward(ctx, rows(xfutr_, rh), dz0.cols_block(col, k),
                       cfg_.exog_grads ? rows(dxfutr_, rh) : MatView<T>{}, row0),
        col += k;
  zone.next(zones_.fm_stat.backward, stat_rows);
  if (fm_stat_) stat_backward(ctx, *fm_stat_, dz0.cols_block(col, k), bsz, row0);
  // Below the projection only RevIN's affine parameters and the exogenous inputs need a
  // gradient.
  const Index rl = bsz * cfg_.input_size;
  MatView<T> dxin = projection_dx() ? rows(dxin_, rl) : MatView<T>{};
  zone.next(zones_.projection.backward);
  projection_.backward(ctx, rows(xin_, rl), rows(proj_, rh), dproj, dxin, false);
  zone.next(zones_.norm.backward);
  if (cfg_.revin)
    revin_.normalize_backward(ConstMat<T>(in.insample_y, rl, n), dxin.cols_block(0, n));
  if (cfg_.exog_grads) unpack_exog_grads(bsz);
}

// Every zone's cost is its block's own (models/zones.h). The norm zone also packs the X + F
// exogenous channels beside y, counted at RevIN's rate per element, so that zone reads per
// element of the projection's input (C₀·N columns).
template <class T>
void TSMixerx<T>::register_zones(profile::Recorder& rec, int model) {
  const double l = double(cfg_.input_size), h = double(cfg_.h), hm = double(cfg_.h * cfg_.outputs),
               packed = double((c0() - 1) * cfg_.n_series);
  zones_.norm = cost_zones(
      rec, model, "norm", l,
      [&](double r) {
        return revin_.normalize_cost(r) + profile::elementwise(r, packed, 8, 1, sizeof(T));
      },
      [&](double r) { return revin_.normalize_backward_cost(r); });
  zones_.norm_inverse = cost_zones(
      rec, model, "norm.inverse", hm, [&](double r) { return revin_.denormalize_cost(r); },
      [&](double r) { return revin_.denormalize_backward_cost(r); });
  zones_.projection =
      block_zones(rec, model, "temporal_projection", l, projection_, projection_dx());
  zones_.fm_hist = block_zones(rec, model, "feature_mixer_hist", h, *fm_hist_);
  // The exogenous-only mixers need an input gradient with exog_grads only.
  const bool dx = cfg_.exog_grads;
  if (fm_futr_) zones_.fm_futr = block_zones(rec, model, "feature_mixer_futr", h, *fm_futr_, dx);
  if (fm_stat_) zones_.fm_stat = block_zones(rec, model, "feature_mixer_stat", h, *fm_stat_, dx);
  zones_.mixers.assign(mixers_.size(), {});
  for (size_t j = 0; j < mixers_.size(); ++j) {
    const std::string p = mixer_prefix(j);
    const Mixer& mx = mixers_[j];
    if (mx.stat)
      zones_.mixers[j].stat = block_zones(rec, model, p + "feature_mixer_stat", h, *mx.stat, dx);
    zones_.mixers[j].temporal = block_zones(rec, model, p + "temporal_mixer", h, *mx.temporal);
    zones_.mixers[j].feature = block_zones(rec, model, p + "feature_mixer", h, *mx.feature);
  }
  zones_.out = block_zones(rec, model, "out", h, out_);
}

template class TSMixerx<float>;
template class TSMixerx<double>;

}  // namespace shoal::models
