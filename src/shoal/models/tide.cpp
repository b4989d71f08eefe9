#include "shoal/models/tide.h"

#include <algorithm>

#include "shoal/models/zones.h"
#include "shoal/profile/cost.h"

namespace shoal::models {

void TiDEConfig::visit(OptionVisitor& v) {
  v("hidden_size", hidden_size, "Width of the dense encoder and decoder");
  v("decoder_output_dim", decoder_output_dim, "Features per horizon step out of the decoder");
  v("temporal_decoder_dim", temporal_decoder_dim, "Hidden width of the temporal decoder");
  v("dropout", dropout, "Dropout in every residual block");
  v("layernorm", layernorm, "LayerNorm at the end of every residual block");
  v("num_encoder_layers", num_encoder_layers, "Residual blocks in the dense encoder");
  v("num_decoder_layers", num_decoder_layers, "Residual blocks in the dense decoder");
  v("temporal_width", temporal_width, "Projected width of each exogenous step");
}

void TiDEConfig::validate_options() const {
  if (hidden_size < 1) option_out_of_range("hidden_size", "an integer ≥ 1", double(hidden_size));
  if (decoder_output_dim < 1)
    option_out_of_range("decoder_output_dim", "an integer ≥ 1", double(decoder_output_dim));
  if (temporal_decoder_dim < 1)
    option_out_of_range("temporal_decoder_dim", "an integer ≥ 1", double(temporal_decoder_dim));
  if (!(dropout >= 0 && dropout < 1))
    option_out_of_range("dropout", "a probability in [0, 1)", dropout);
  if (num_encoder_layers < 1)
    option_out_of_range("num_encoder_layers", "an integer ≥ 1", double(num_encoder_layers));
  if (num_decoder_layers < 1)
    option_out_of_range("num_decoder_layers", "an integer ≥ 1", double(num_decoder_layers));
  if (temporal_width < 1)
    option_out_of_range("temporal_width", "an integer ≥ 1", double(temporal_width));
}

template <class T>
TiDE<T>::TiDE(Config cfg)
    : ForecastModel(cfg),
      temporal_({.h = cfg.h,
                 .decoder_output_dim = cfg.decoder_output_dim,
                 .futr_dim = cfg.futr_exog > 0 ? cfg.temporal_width : 0,
                 .hidden_size = cfg.temporal_decoder_dim,
                 .outputs = cfg.outputs,
                 .dropout = cfg.dropout,
                 .layernorm = cfg.layernorm,
                 .stream = 0x7164'0000 + 63}),
      skip_({.in = cfg.input_size, .out = cfg.h * cfg.outputs}) {
  const Index hid = cfg_.hidden_size;
  uint64_t stream = 0x7164'0000;
  auto projection = [&](Index in, uint64_t proj_stream) {
    return std::make_unique<layers::MLPResidual<T>>(
        typename layers::MLPResidual<T>::Config{.input_dim = in,
                                                .hidden_size = hid,
                                                .output_dim = cfg_.temporal_width,
                                                .dropout = cfg_.dropout,
                                                .layernorm = cfg_.layernorm,
                                                .stream = proj_stream});
  };
  if (cfg_.hist_exog > 0) hist_proj_ = projection(cfg_.hist_exog, 0x7164'0000 + 60);
  if (cfg_.futr_exog > 0) futr_proj_ = projection(cfg_.futr_exog, 0x7164'0000 + 61);
  for (int64_t k = 0; k < cfg_.num_encoder_layers; ++k)
    encoder_.push_back(std::make_unique<layers::MLPResidual<T>>(
        typename layers::MLPResidual<T>::Config{.input_dim = k == 0 ? encoder_input() : hid,
                                                .hidden_size = hid,
                                                .output_dim = hid,
                                                .dropout = cfg_.dropout,
                                                .layernorm = cfg_.layernorm,
                                                .stream = stream++}));
  for (int64_t k = 0; k < cfg_.num_decoder_layers; ++k)
    decoder_.push_back(
        std::make_unique<layers::MLPResidual<T>>(typename layers::MLPResidual<T>::Config{
            .input_dim = hid,
            .hidden_size = hid,
            .output_dim = k + 1 == cfg_.num_decoder_layers ? cfg_.decoder_output_dim * cfg_.h : hid,
            .dropout = cfg_.dropout,
            .layernorm = cfg_.layernorm,
            .stream = stream++}));
  h_.resize(encoder_.size() + decoder_.size());
  dh_.resize(h_.size());
}

template <class T>
Index TiDE<T>::encoder_input() const {
  const Index L = cfg_.input_size, tw = cfg_.temporal_width;
  return L + (cfg_.hist_exog > 0 ? L * tw : 0) + (cfg_.futr_exog > 0 ? (L + cfg_.h) * tw : 0) +
         cfg_.stat_exog;
}

template <class T>
void TiDE<T>::plan(Planner& planner, Index max_batch) {
  set_max_batch(max_batch);
  const Index B = max_batch;
  auto scoped = [&](const std::string& scope, auto& layer) {
    planner.push_scope(scope);
    layer.plan(planner, B);
    planner.pop_scope();
  };
  const Index L = cfg_.input_size, H = cfg_.h, tw = cfg_.temporal_width;
  if (hist_proj_) {
    planner.push_scope("hist_exog_projection.");
    hist_proj_->plan(planner, B * L);
    planner.pop_scope();
    planner.buffer(hrows_, Region::kActivations, "hist_rows", {B * L, cfg_.hist_exog});
    planner.buffer(hp_, Region::kActivations, "hist_proj", {B * L, tw});
    planner.buffer(dhp_, Region::kActivationGrads, "dhist_proj", {B * L, tw});
    if (cfg_.exog_grads) {
      planner.buffer(dhrows_, Region::kActivationGrads, "dhist_rows", {B * L, cfg_.hist_exog});
      planner.buffer(dhist_, Region::kActivationGrads, "dhist_exog", {B, cfg_.hist_exog, L});
    }
  }
  if (futr_proj_) {
    planner.push_scope("futr_exog_projection.");
    futr_proj_->plan(planner, B * (L + H));
    planner.pop_scope();
    planner.buffer(frows_, Region::kActivations, "futr_rows", {B * (L + H), cfg_.futr_exog});
    planner.buffer(fp_, Region::kActivations, "futr_proj", {B * (L + H), tw});
    planner.buffer(dfp_, Region::kActivationGrads, "dfutr_proj", {B * (L + H), tw});
    planner.buffer(dfh_, Region::kActivationGrads, "dfutr_h", {B, H * tw});
    if (cfg_.exog_grads) {
      planner.buffer(dfrows_, Region::kActivationGrads, "dfutr_rows",
                     {B * (L + H), cfg_.futr_exog});
      planner.buffer(dfutr_, Region::kActivationGrads, "dfutr_exog", {B, cfg_.futr_exog, L + H});
    }
  }
  if (cfg_.exog_grads && cfg_.stat_exog > 0)
    planner.buffer(dstat_, Region::kActivationGrads, "dstat_exog", {B, cfg_.stat_exog});
  if (has_exog()) {
    planner.buffer(xin_, Region::kActivations, "x", {B, encoder_input()});
    planner.buffer(dxin_, Region::kActivationGrads, "dx", {B, encoder_input()});
  }
  for (size_t k = 0; k < encoder_.size(); ++k)
    scoped("dense_encoder." + std::to_string(k) + ".", *encoder_[k]);
  for (size_t k = 0; k < decoder_.size(); ++k)
    scoped("dense_decoder." + std::to_string(k) + ".", *decoder_[k]);
  scoped("temporal_decoder.", temporal_);
  scoped("global_skip.", skip_);
  for (size_t k = 0; k < h_.size(); ++k) {
    const Index w = k < encoder_.size() ? encoder_[k]->cfg.output_dim
                                        : decoder_[k - encoder_.size()]->cfg.output_dim;
    planner.buffer(h_[k], Region::kActivations, "h" + std::to_string(k), {B, w});
    planner.buffer(dh_[k], Region::kActivationGrads, "dh" + std::to_string(k), {B, w});
  }
  planner.buffer(out_, Region::kActivations, "out", {B, H * cfg_.outputs});
  planner.buffer(tout_, Region::kActivations, "tout", {B, H * cfg_.outputs});
}

template <class T>
void TiDE<T>::init(RngStream& rng) {
  if (hist_proj_) {
    hist_proj_->init(rng);
  } else if (futr_proj_) {
    // neuralforecast's unused historical projection, MLPResidual(0, hidden, tw): its empty
    // weights draw nothing, its biases (bound 0) and lin2 draw as usual.
    const Index hid = cfg_.hidden_size, tw = cfg_.temporal_width;
    for (Index i = 0; i < hid + tw * hid + tw + tw; ++i) rng.uniform();
  }
  if (futr_proj_) futr_proj_->init(rng);
  for (auto& e : encoder_) e->init(rng);
  for (auto& d : decoder_) d->init(rng);
  temporal_.init(rng);
  skip_.init(rng);
}

template <class T>
MatView<T> TiDE<T>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  const Index B = in.batch, L = cfg_.input_size, H = cfg_.h, X = cfg_.hist_exog, F = cfg_.futr_exog,
              S = cfg_.stat_exog, tw = cfg_.temporal_width;
  const ConstMat<T> x(in.insample_y, B, L);
  auto rows = [](Buffer<T>& buf, Index n) { return buf.mat().rows_block(0, n); };
  profile::ZoneChain zone(ctx.profiler, B);
  MatView<T> out = rows(out_, B), tout = rows(tout_, B);
  if (temporal_.output_is_bias()) {
    // The temporal decoder's output is its LayerNorm's bias (layernorm with one output, M = 1:
    // with M > 1 the LayerNorm is over the M outputs and live): nothing before it can change
    // the forecast, so the projections, encoder and decoder are not computed.
    zone.next(ztmp_.forward);
    temporal_.forward_bias(tout);
    return add_skip(ctx, x, out, tout, zone);
  }
  // The projections run per time step on rows gathered from shoal's channel-major windows.
  zone.next(zproj_.forward);
  if (hist_proj_) {
    MatView<T> hr = rows(hrows_, B * L);
    for (Index w = 0; w < B; ++w)
      for (Index t = 0; t < L; ++t)
        for (Index c = 0; c < X; ++c) hr(w * L + t, c) = in.hist_exog[(w * X + c) * L + t];
    hist_proj_->forward(ctx, hr, rows(hp_, B * L), in.first_window * L);
  }
  if (futr_proj_) {
    MatView<T> fr = rows(frows_, B * (L + H));
    for (Index w = 0; w < B; ++w)
      for (Index t = 0; t < L + H; ++t)
        for (Index c = 0; c < F; ++c)
          fr(w * (L + H) + t, c) = in.futr_exog[(w * F + c) * (L + H) + t];
    futr_proj_->forward(ctx, fr, rows(fp_, B * (L + H)), in.first_window * (L + H));
  }
  ConstMat<T> cur = x;
  if (has_exog()) {
    // [y | hist projection (t·tw + k) | future projection | stat], neuralforecast's order.
    MatView<T> xi = rows(xin_, B);
    for (Index w = 0; w < B; ++w) {
      T* r = std::copy(x.row(w), x.row(w) + L, xi.row(w));
      if (hist_proj_)
        r = std::copy(hp_.view.data + w * L * tw, hp_.view.data + (w + 1) * L * tw, r);
      if (futr_proj_)
        r = std::copy(fp_.view.data + w * (L + H) * tw, fp_.view.data + (w + 1) * (L + H) * tw, r);
      if (S > 0) std::copy_n(in.stat_exog + w * in.stat_window_stride, S, r);
    }
    cur = xi;
  }
  zone.next(zenc_.forward);
  for (size_t k = 0; k < h_.size(); ++k) {
    if (k == encoder_.size()) zone.next(zdec_.forward);
    auto& block = k < encoder_.size() ? *encoder_[k] : *decoder_[k - encoder_.size()];
    block.forward(ctx, cur, rows(h_[k], B), in.first_window);
    cur = rows(h_[k], B);
  }
  zone.next(ztmp_.forward);
  // The future projection's horizon steps: a column block of it seen as [B, (L + H)·tw].
  const ConstMat<T> fh =
      futr_proj_ ? ConstMat<T>(fp_.view.data, B, (L + H) * tw).cols_block(L * tw, H * tw)
                 : ConstMat<T>{};
  temporal_.forward(ctx, cur, fh, tout, in.first_window);
  return add_skip(ctx, x, out, tout, zone);
}

template <class T>
MatView<T> TiDE<T>::add_skip(const Ctx& ctx, ConstMat<T> x, MatView<T> out, ConstMat<T> tout,
                             profile::ZoneChain& zone) {
  zone.next(zskip_.forward);
  skip_.forward(ctx, x, out);
  const Index HM = cfg_.h * cfg_.outputs;
  for (Index w = 0; w < out.rows; ++w)
    for (Index t = 0; t < HM; ++t) out(w, t) += tout(w, t);
  // [B, H·M] (neuralforecast's [B, H, M]: the skip's H·M outputs reshaped step-major) is the
  // trainer's [B·H, N·M], N = 1.
  return MatView<T>(out.data, out.rows * cfg_.h, cfg_.outputs);
}

template <class T>
void TiDE<T>::backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout) {
  const Index B = in.batch, L = cfg_.input_size, H = cfg_.h, tw = cfg_.temporal_width;
  const ConstMat<T> x(in.insample_y, B, L), dy(dout.data, B, H * cfg_.outputs);
  auto rows = [](Buffer<T>& buf, Index n) { return buf.mat().rows_block(0, n); };
  profile::ZoneChain zone(ctx.profiler, B);
  zone.next(zskip_.backward);
  // The input is data: the skip forms parameter gradients only.
  skip_.backward(ctx, x, rows(out_, B), dy, MatView<T>{});
  zone.next(ztmp_.backward);
  if (temporal_.output_is_bias()) {
    // No gradient passes the temporal decoder's LayerNorm: every weight before it keeps a zero
    // gradient, as neuralforecast's backward leaves it.
    temporal_.backward_bias(dy);
    if (cfg_.exog_grads) zero_exog_grads(in);
    return;
  }
  const size_t n = h_.size();
  temporal_.backward(ctx, dy, rows(dh_[n - 1], B), futr_proj_ ? rows(dfh_, B) : MatView<T>{},
                     in.first_window);
  zone.next(zdec_.backward);
  for (size_t k = n; k-- > 0;) {
    if (k + 1 == encoder_.size()) zone.next(zenc_.backward);
    auto& block = k < encoder_.size() ? *encoder_[k] : *decoder_[k - encoder_.size()];
    const ConstMat<T> xin = k > 0        ? ConstMat<T>(rows(h_[k - 1], B))
                            : has_exog() ? ConstMat<T>(rows(xin_, B))
                                         : x;
    // The first block's input gradient only feeds the projections (and the static inputs').
    const MatView<T> dx = k > 0 ? rows(dh_[k - 1], B) : first_dx() ? rows(dxin_, B) : MatView<T>{};
    block.backward(ctx, xin, rows(dh_[k], B), dx, in.first_window);
  }
  if (!first_dx()) return;
  zone.next(zproj_.backward);
  const MatView<T> dxi = rows(dxin_, B);
  Index off = L;
  if (hist_proj_) {
    MatView<T> d = rows(dhp_, B * L);
    for (Index w = 0; w < B; ++w)
      std::copy(dxi.row(w) + off, dxi.row(w) + off + L * tw, d.row(w * L));
    hist_proj_->backward(ctx, rows(hrows_, B * L), d,
                         cfg_.exog_grads ? rows(dhrows_, B * L) : MatView<T>{},
                         in.first_window * L);
    off += L * tw;
  }
  if (futr_proj_) {
    MatView<T> d = rows(dfp_, B * (L + H));
    const MatView<T> dfh = rows(dfh_, B);
    for (Index w = 0; w < B; ++w) {
      T* dst = d.row(w * (L + H));
      std::copy(dxi.row(w) + off, dxi.row(w) + off + (L + H) * tw, dst);
      // The horizon steps also fed the temporal decoder.
      for (Index i = 0; i < H * tw; ++i) dst[L * tw + i] += dfh(w, i);
    }
    futr_proj_->backward(ctx, rows(frows_, B * (L + H)), d,
                         cfg_.exog_grads ? rows(dfrows_, B * (L + H)) : MatView<T>{},
                         in.first_window * (L + H));
  }
  if (cfg_.exog_grads) write_exog_grads(in);
}

template <class T>
void TiDE<T>::write_exog_grads(const ForecastInputs<T>& in) {
  const Index B = in.batch, L = cfg_.input_size, H = cfg_.h, X = cfg_.hist_exog, F = cfg_.futr_exog,
              S = cfg_.stat_exog;
  // The inverse of forward's gathers: rows (w·T + t, c) back to channel-major (w·C + c)·T + t.
  if (hist_proj_) {
    const ConstMat<T> d = dhrows_.mat();
    T* g = dhist_.view.data;
    for (Index w = 0; w < B; ++w)
      for (Index t = 0; t < L; ++t)
        for (Index c = 0; c < X; ++c) g[(w * X + c) * L + t] = d(w * L + t, c);
  }
  if (futr_proj_) {
    const ConstMat<T> d = dfrows_.mat();
    T* g = dfutr_.view.data;
    for (Index w = 0; w < B; ++w)
      for (Index t = 0; t < L + H; ++t)
        for (Index c = 0; c < F; ++c) g[(w * F + c) * (L + H) + t] = d(w * (L + H) + t, c);
  }
  if (S > 0) {
    // The static inputs are the encoder input's last S columns.
    const ConstMat<T> dxi = dxin_.mat();
    const Index off = encoder_input() - S;
    T* g = dstat_.view.data;
    if (in.stat_window_stride > 0) {
      for (Index w = 0; w < B; ++w) std::copy_n(dxi.row(w) + off, S, g + w * S);
    } else {
      // One row shared by every window: its gradient sums theirs.
      std::copy_n(dxi.row(0) + off, S, g);
      for (Index w = 1; w < B; ++w)
        for (Index s = 0; s < S; ++s) g[s] += dxi(w, off + s);
    }
  }
}

template <class T>
void TiDE<T>::zero_exog_grads(const ForecastInputs<T>& in) {
  const Index B = in.batch, L = cfg_.input_size, H = cfg_.h;
  if (hist_proj_) std::fill_n(dhist_.view.data, B * cfg_.hist_exog * L, T(0));
  if (futr_proj_) std::fill_n(dfutr_.view.data, B * cfg_.futr_exog * (L + H), T(0));
  if (cfg_.stat_exog > 0)
    std::fill_n(dstat_.view.data, (in.stat_window_stride > 0 ? B : 1) * cfg_.stat_exog, T(0));
}

template <class T>
ExogGrads<T> TiDE<T>::exog_grads() const {
  SHOAL_CHECK(cfg_.exog_grads, "TiDE: exog_grads() needs a model built with exog_grads");
  return {.hist = hist_proj_ ? dhist_.view.data : nullptr,
          .futr = futr_proj_ ? dfutr_.view.data : nullptr,
          .stat = cfg_.stat_exog > 0 ? dstat_.view.data : nullptr};
}

template <class T>
void TiDE<T>::register_zones(profile::Recorder& rec, int model) {
  const double e = sizeof(T), H = double(cfg_.h * cfg_.outputs);
  auto chain = [&](size_t begin, size_t end) {
    return [this, begin, end](double rows, bool fwd) {
      profile::Cost c;
      for (size_t k = begin; k < end; ++k) {
        const auto& b = k < encoder_.size() ? *encoder_[k] : *decoder_[k - encoder_.size()];
        c += fwd ? b.forward_cost(rows) : b.backward_cost(rows, k > 0 || first_dx());
      }
      return c;
    };
  };
  const auto enc = chain(0, encoder_.size()), dec = chain(encoder_.size(), h_.size());
  zenc_ = cost_zones(
      rec, model, "dense_encoder", 1, [&](double r) { return enc(r, true); },
      [&](double r) { return enc(r, false); });
  zdec_ = cost_zones(
      rec, model, "dense_decoder", 1, [&](double r) { return dec(r, true); },
      [&](double r) { return dec(r, false); });
  ztmp_ = block_zones(rec, model, "temporal_decoder", 1, temporal_);
  if (hist_proj_ || futr_proj_) {
    const double L = double(cfg_.input_size), LH = double(cfg_.input_size + cfg_.h);
    auto proj = [&](double r, bool fwd) {
      profile::Cost c;
      if (hist_proj_)
        c += fwd ? hist_proj_->forward_cost(r * L)
                 : hist_proj_->backward_cost(r * L, cfg_.exog_grads);
      if (futr_proj_)
        c += fwd ? futr_proj_->forward_cost(r * LH)
                 : futr_proj_->backward_cost(r * LH, cfg_.exog_grads);
      return c;
    };
    zproj_ = cost_zones(
        rec, model, "exog_projection", 1, [&](double r) { return proj(r, true); },
        [&](double r) { return proj(r, false); });
  }
  zskip_ = cost_zones(
      rec, model, "global_skip", 1,
      [&](double r) { return skip_.forward_cost(r) + profile::elementwise(r, H, 1, 2, e); },
      [&](double r) { return skip_.backward_cost(r, /*dx=*/false); });
}

template class TiDE<float>;
template class TiDE<double>;

}  // namespace shoal::models
