#include "shoal/models/tide.h"

#include "shoal/models/zones.h"
#include "shoal/profile/cost.h"

namespace shoal::models {

template <class T>
void TiDE<T>::Config::visit(OptionVisitor& v) {
  v("hidden_size", hidden_size, "Width of the dense encoder and decoder");
  v("decoder_output_dim", decoder_output_dim, "Features per horizon step out of the decoder");
  v("temporal_decoder_dim", temporal_decoder_dim, "Hidden width of the temporal decoder");
  v("dropout", dropout, "Dropout in every residual block");
  v("layernorm", layernorm, "LayerNorm at the end of every residual block");
  v("num_encoder_layers", num_encoder_layers, "Residual blocks in the dense encoder");
  v("num_decoder_layers", num_decoder_layers, "Residual blocks in the dense decoder");
  v("temporal_width", temporal_width, "Projected width of each exogenous step (unused yet)");
}

template <class T>
void TiDE<T>::Config::validate() const {
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
void TiDE<T>::Config::set_shape(const WindowShape& s) {
  SHOAL_CHECK(s.hist_exog == 0 && s.futr_exog == 0 && s.stat_exog == 0,
              "tide takes no exogenous inputs yet (got {} hist, {} futr, {} static)", s.hist_exog,
              s.futr_exog, s.stat_exog);
  SHOAL_CHECK(s.n_series == 1,
              "tide is a univariate model: fit it one series at a time, got {} series in one "
              "panel",
              s.n_series);
  h = s.h;
  input_size = s.input_size;
  n_series = 1;
}

template <class T>
TiDE<T>::TiDE(Config cfg)
    : cfg_(cfg),
      temporal_({.h = cfg.h,
                 .decoder_output_dim = cfg.decoder_output_dim,
                 .hidden_size = cfg.temporal_decoder_dim,
                 .outputs = 1,
                 .dropout = cfg.dropout,
                 .layernorm = cfg.layernorm,
                 .stream = 0x7164'0000 + 63}),
      skip_({.in = cfg.input_size, .out = cfg.h}) {
  SHOAL_CHECK(cfg_.h > 0 && cfg_.input_size > 0 && cfg_.n_series == 1,
              "TiDE needs h, input_size > 0 and one series, got {} {} {}", cfg_.h, cfg_.input_size,
              cfg_.n_series);
  cfg_.validate();
  const Index hid = cfg_.hidden_size;
  uint64_t stream = 0x7164'0000;
  for (int64_t k = 0; k < cfg_.num_encoder_layers; ++k)
    encoder_.push_back(std::make_unique<layers::MLPResidual<T>>(
        typename layers::MLPResidual<T>::Config{.input_dim = k == 0 ? cfg_.input_size : hid,
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
void TiDE<T>::plan(Planner& planner, Index max_batch) {
  SHOAL_CHECK(max_batch > 0, "TiDE max_batch must be > 0, got {}", max_batch);
  const Index B = max_batch;
  auto scoped = [&](const std::string& scope, auto& layer) {
    planner.push_scope(scope);
    layer.plan(planner, B);
    planner.pop_scope();
  };
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
  planner.buffer(out_, Region::kActivations, "out", {B, cfg_.h});
  planner.buffer(tout_, Region::kActivations, "tout", {B, cfg_.h});
}

template <class T>
void TiDE<T>::init(RngStream& rng) {
  for (auto& e : encoder_) e->init(rng);
  for (auto& d : decoder_) d->init(rng);
  temporal_.init(rng);
  skip_.init(rng);
}

template <class T>
MatView<T> TiDE<T>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  const Index B = in.batch, L = cfg_.input_size, H = cfg_.h;
  const ConstMat<T> x(in.insample_y, B, L);
  auto rows = [B](Buffer<T>& buf) { return buf.mat().rows_block(0, B); };
  profile::ZoneChain zone(ctx.profiler, B);
  zone.next(zenc_.forward);
  ConstMat<T> cur = x;
  for (size_t k = 0; k < h_.size(); ++k) {
    if (k == encoder_.size()) zone.next(zdec_.forward);
    auto& block = k < encoder_.size() ? *encoder_[k] : *decoder_[k - encoder_.size()];
    block.forward(ctx, cur, rows(h_[k]), in.first_window);
    cur = rows(h_[k]);
  }
  zone.next(ztmp_.forward);
  MatView<T> out = rows(out_), tout = rows(tout_);
  temporal_.forward(ctx, cur, ConstMat<T>{}, tout, in.first_window);
  zone.next(zskip_.forward);
  skip_.forward(ctx, x, out);
  for (Index w = 0; w < B; ++w)
    for (Index t = 0; t < H; ++t) out(w, t) += tout(w, t);
  // [B, H] is the trainer's [B·H, N = 1].
  return MatView<T>(out.data, B * H, 1);
}

template <class T>
void TiDE<T>::backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout) {
  const Index B = in.batch, L = cfg_.input_size, H = cfg_.h;
  const ConstMat<T> x(in.insample_y, B, L), dy(dout.data, B, H);
  auto rows = [B](Buffer<T>& buf) { return buf.mat().rows_block(0, B); };
  profile::ZoneChain zone(ctx.profiler, B);
  zone.next(zskip_.backward);
  // The input is data: the skip and the first encoder block form parameter gradients only.
  skip_.backward(ctx, x, rows(out_), dy, MatView<T>{});
  zone.next(ztmp_.backward);
  const size_t n = h_.size();
  temporal_.backward(ctx, dy, rows(dh_[n - 1]), MatView<T>{}, in.first_window);
  zone.next(zdec_.backward);
  for (size_t k = n; k-- > 0;) {
    if (k + 1 == encoder_.size()) zone.next(zenc_.backward);
    auto& block = k < encoder_.size() ? *encoder_[k] : *decoder_[k - encoder_.size()];
    const ConstMat<T> xin = k == 0 ? x : ConstMat<T>(rows(h_[k - 1]));
    block.backward(ctx, xin, rows(dh_[k]), k == 0 ? MatView<T>{} : rows(dh_[k - 1]),
                   in.first_window);
  }
}

template <class T>
void TiDE<T>::register_zones(profile::Recorder& rec, int model) {
  const double e = sizeof(T), H = double(cfg_.h);
  auto chain = [&](size_t begin, size_t end) {
    return [this, begin, end](double rows, bool fwd) {
      profile::Cost c;
      for (size_t k = begin; k < end; ++k) {
        const auto& b = k < encoder_.size() ? *encoder_[k] : *decoder_[k - encoder_.size()];
        c += fwd ? b.forward_cost(rows) : b.backward_cost(rows, k > 0);
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
  zskip_ = cost_zones(
      rec, model, "global_skip", 1,
      [&](double r) { return skip_.forward_cost(r) + profile::elementwise(r, H, 1, 2, e); },
      [&](double r) { return skip_.backward_cost(r, /*dx=*/false); });
}

template class TiDE<float>;
template class TiDE<double>;

}  // namespace shoal::models
