#include "shoal/models/itransformer.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "shoal/layers/view_ops.h"
#include "shoal/models/zones.h"

namespace shoal::models {

void ITransformerConfig::visit(OptionVisitor& v) {
  v("hidden_size", hidden_size, "Width of the tokens (the model's dimension)");
  v("n_heads", n_heads, "Attention heads (each hidden_size / n_heads wide)");
  v("e_layers", e_layers, "Encoder layers");
  v("d_layers", d_layers, "Accepted as neuralforecast accepts it; its iTransformer reads nothing");
  v("d_ff", d_ff, "Width of each encoder layer's feed-forward (0: 4 · hidden_size)");
  v("factor", factor, "Accepted as neuralforecast accepts it; its full attention reads nothing");
  v("dropout", dropout, "Dropout probability (embeddings, attention and encoder layers)");
  v("use_norm", use_norm, "Normalise each window's series by its own mean and deviation");
}

void ITransformerConfig::validate_options() const {
  if (n_heads < 1) option_out_of_range("n_heads", "an integer ≥ 1", double(n_heads));
  // hidden_size / n_heads (rounded down) is each head's width, so it must be at least 1.
  if (hidden_size < n_heads)
    option_out_of_range("hidden_size", "an integer ≥ n_heads", double(hidden_size));
  if (e_layers < 0) option_out_of_range("e_layers", "an integer ≥ 0", double(e_layers));
  if (d_ff < 0) option_out_of_range("d_ff", "an integer ≥ 0 (0: 4 · hidden_size)", double(d_ff));
  if (!(dropout >= 0 && dropout < 1))
    option_out_of_range("dropout", "a probability in [0, 1)", dropout);
}

template <class T>
ITransformer<T>::ITransformer(Config cfg)
    : ForecastModel(std::move(cfg)),
      stats_({.n_series = cfg_.n_series,
              .input_size = cfg_.input_size,
              .rows = cfg_.h * cfg_.outputs}),
      enc_({.steps = cfg_.input_size,
            .n_series = cfg_.n_series,
            .hidden_size = cfg_.hidden_size,
            .dropout = cfg_.dropout,
            .stream = 1}),
      futr_({.steps = cfg_.input_size + cfg_.h,
             .channels = std::max<Index>(cfg_.futr_exog, 1),
             .n_series = cfg_.n_series,
             .hidden_size = cfg_.hidden_size,
             .dropout = cfg_.dropout,
             .stream = 2}),
      norm_({.normalized_shape = {cfg_.hidden_size}}),
      projector_({.in = cfg_.hidden_size, .out = cfg_.h * cfg_.outputs}) {
  layers_.reserve(size_t(cfg_.e_layers));
  for (Index k = 0; k < cfg_.e_layers; ++k)
    layers_.emplace_back(
        typename layers::TransformerEncoderLayer<T>::Config{.hidden_size = cfg_.hidden_size,
                                                            .n_heads = cfg_.n_heads,
                                                            .conv_hidden_size = cfg_.d_ff,
                                                            .tokens = cfg_.tokens(),
                                                            .dropout = cfg_.dropout,
                                                            .attention_dropout = cfg_.dropout,
                                                            .gelu = true,
                                                            .stream = uint64_t(3 + 4 * k)});
  z_.resize(layers_.size() + 1);
  zlayers_.resize(layers_.size());  // no zones until register_zones
}

template <class T>
void ITransformer<T>::plan(Planner& planner, Index max_batch) {
  set_max_batch(max_batch);
  const Index n = cfg_.n_series, l = cfg_.input_size, f = cfg_.futr_exog, e = cfg_.hidden_size,
              hm = cfg_.h * cfg_.outputs, rows = max_batch * cfg_.tokens(), rn = max_batch * n;
  if (cfg_.use_norm) {
    plan_layer(planner, "norm.", stats_, max_batch * l);
    planner.push_scope("act.");
    planner.buffer(xn_, Region::kActivations, "xn", {max_batch * l, n});
    planner.pop_scope();
  }
  plan_layer(planner, "enc_embedding.value_embedding.", enc_, max_batch * l);
  if (f > 0) plan_layer(planner, "futr_embedding.", futr_, max_batch * f * (l + cfg_.h));
  for (size_t k = 0; k < layers_.size(); ++k)
    plan_layer(planner, "encoder.attn_layers." + std::to_string(k) + ".", layers_[k], rows);
  plan_layer(planner, "encoder.norm.", norm_, rn);
  plan_layer(planner, "projector.", projector_, rn);
  planner.push_scope("act.");
  if (f > 0) {
    planner.buffer(e_, Region::kActivations, "e", {rn, e});
    planner.buffer(f_, Region::kActivations, "f", {rn * f, e});
    planner.buffer(de_, Region::kActivationGrads, "de", {rn, e});
    planner.buffer(df_, Region::kActivationGrads, "df", {rn * f, e});
    planner.buffer(g_, Region::kActivations, "g", {rn, e});
  }
  for (size_t k = 0; k < z_.size(); ++k)
    planner.buffer(z_[k], Region::kActivations, "z" + std::to_string(k), {rows, e});
  planner.buffer(dz_a_, Region::kActivationGrads, "dz_a", {rows, e});
  planner.buffer(dz_b_, Region::kActivationGrads, "dz_b", {rows, e});
  planner.buffer(gn_, Region::kActivations, "gn", {rn, e});
  planner.buffer(dg_, Region::kActivationGrads, "dg", {rn, e});
  planner.buffer(dgn_, Region::kActivationGrads, "dgn", {rn, e});
  planner.buffer(p_, Region::kActivations, "p", {rn, hm});
  planner.buffer(dp_, Region::kActivationGrads, "dp", {rn, hm});
  planner.buffer(out_, Region::kActivations, "out", {max_batch * hm, n});
  if (cfg_.use_norm) planner.buffer(dout_, Region::kActivationGrads, "dout", {max_batch * hm, n});
  if (cfg_.exog_grads && f > 0)
    planner.buffer(this->dfutr_, Region::kActivationGrads, "dfutr",
                   {max_batch * f * (l + cfg_.h), n});
  planner.pop_scope();
}

template <class T>
void ITransformer<T>::register_zones(profile::Recorder& rec, int model) {
  const double l = double(cfg_.input_size), n = double(cfg_.n_series),
               hm = double(cfg_.h * cfg_.outputs), tok = double(cfg_.tokens());
  zstats_ = cost_zones(
      rec, model, "norm", 1.0,
      [&](double w) {
        return cfg_.use_norm ? stats_.normalize_cost(w * l) + stats_.denormalize_cost(w * hm)
                             : profile::Cost{};
      },
      [&](double w) {
        return cfg_.use_norm ? stats_.denormalize_backward_cost(w * hm) : profile::Cost{};
      });
  zenc_ = block_zones(rec, model, "enc_embedding", l, enc_, false);
  if (cfg_.futr_exog > 0)
    zfutr_ =
        block_zones(rec, model, "futr_embedding",
                    double(cfg_.futr_exog * (cfg_.input_size + cfg_.h)), futr_, cfg_.exog_grads);
  for (size_t k = 0; k < layers_.size(); ++k)
    zlayers_[k] =
        block_zones(rec, model, "encoder.attn_layers." + std::to_string(k), tok, layers_[k]);
  znorm_ = block_zones(rec, model, "encoder.norm", n, norm_);
  zproj_ = block_zones(rec, model, "projector", n, projector_);
}

template <class T>
MatView<T> ITransformer<T>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  check_inputs(in);
  SHOAL_CHECK(in.hist_exog == nullptr && in.stat_exog == nullptr,
              "iTransformer takes future exogenous inputs only");
  const Index b = in.batch, n = cfg_.n_series, l = cfg_.input_size, f = cfg_.futr_exog,
              hm = cfg_.h * cfg_.outputs, tok = cfg_.tokens(), rows = b * tok, rn = b * n,
              w0 = in.first_window;
  profile::ZoneChain zone(ctx.profiler, b);
  ConstMat<T> x(in.insample_y, b * l, n);
  zone.next(zstats_.forward);
  if (cfg_.use_norm) {
    const MatView<T> xn = xn_.mat().rows_block(0, b * l);
    stats_.normalize(x, xn);
    x = xn;
  }
  const MatView<T> z0 = z_[0].mat().rows_block(0, rows);
  zone.next(zenc_.forward);
  if (f == 0) {
    enc_.forward(ctx, x, z0, w0);
  } else {
    const MatView<T> em = e_.mat().rows_block(0, rn), fm = f_.mat().rows_block(0, rn * f);
    enc_.forward(ctx, x, em, w0);
    zone.next(zfutr_.forward);
    futr_.forward(ctx, ConstMat<T>(in.futr_exog, b * f * (l + cfg_.h), n), fm, w0);
    for (Index w = 0; w < b; ++w) {  // each window's series tokens, then its exogenous ones
      layers::copy_view<T>(em.rows_block(w * n, n), z0.rows_block(w * tok, n));
      layers::copy_view<T>(fm.rows_block(w * n * f, n * f), z0.rows_block(w * tok + n, n * f));
    }
  }
  for (size_t k = 0; k < layers_.size(); ++k) {
    zone.next(zlayers_[k].forward);
    layers_[k].forward(ctx, z_[k].mat().rows_block(0, rows), z_[k + 1].mat().rows_block(0, rows),
                       w0 * tok);
  }
  MatView<T> g = z_.back().mat().rows_block(0, rows);
  if (f > 0) {  // the series' tokens of each window
    const MatView<T> gm = g_.mat().rows_block(0, rn);
    for (Index w = 0; w < b; ++w)
      layers::copy_view<T>(g.rows_block(w * tok, n), gm.rows_block(w * n, n));
    g = gm;
  }
  const MatView<T> gn = gn_.mat().rows_block(0, rn), p = p_.mat().rows_block(0, rn),
                   out = out_.mat().rows_block(0, b * hm);
  zone.next(znorm_.forward);
  norm_.forward(ctx, g, gn);
  zone.next(zproj_.forward);
  projector_.forward(ctx, gn, p);
  layers::transpose_windows<T>(p, out, b, false);  // [B·N, H·M] → [B·H·M, N]
  if (cfg_.use_norm) stats_.denormalize(out, out);
  // [B·H·M, N] is neuralforecast's [B, H, M·N].
  return MatView<T>(out.data, b * cfg_.h, cfg_.outputs * n);
}

template <class T>
void ITransformer<T>::backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout) {
  const Index b = in.batch, n = cfg_.n_series, l = cfg_.input_size, f = cfg_.futr_exog,
              hm = cfg_.h * cfg_.outputs, tok = cfg_.tokens(), rows = b * tok, rn = b * n,
              w0 = in.first_window;
  SHOAL_DCHECK(dout.rows == b * cfg_.h && dout.cols == cfg_.outputs * n && dout.contiguous());
  profile::ZoneChain zone(ctx.profiler, b);
  ConstMat<T> d(dout.data, b * hm, n);
  zone.next(zproj_.backward);
  if (cfg_.use_norm) {
    const MatView<T> dm = dout_.mat().rows_block(0, b * hm);
    stats_.denormalize_backward(d, dm);
    d = dm;
  }
  const MatView<T> dp = dp_.mat().rows_block(0, rn), dgn = dgn_.mat().rows_block(0, rn);
  layers::transpose_windows<T>(d, dp, b, false);  // [B·H·M, N] → [B·N, H·M]
  projector_.backward(ctx, gn_.mat().rows_block(0, rn), ConstMat<T>(), dp, dgn);
  zone.next(znorm_.backward);
  MatView<T> dz = dz_a_.mat().rows_block(0, rows), dz_next = dz_b_.mat().rows_block(0, rows);
  ConstMat<T> g = z_.back().mat().rows_block(0, rows);
  if (f > 0) {
    const MatView<T> dg = dg_.mat().rows_block(0, rn);
    norm_.backward(ctx, g_.mat().rows_block(0, rn), ConstMat<T>(), dgn, dg);
    // Only the series' tokens reach the head: the exogenous tokens' gradient starts at 0.
    std::memset(dz.data, 0, sizeof(T) * size_t(rows * dz.ld));
    for (Index w = 0; w < b; ++w)
      layers::copy_view<T>(dg.rows_block(w * n, n), dz.rows_block(w * tok, n));
  } else {
    norm_.backward(ctx, g, ConstMat<T>(), dgn, dz);
  }
  for (size_t k = layers_.size(); k-- > 0;) {
    zone.next(zlayers_[k].backward);
    layers_[k].backward(ctx, z_[k].mat().rows_block(0, rows), z_[k + 1].mat().rows_block(0, rows),
                        dz, dz_next, w0 * tok);
    std::swap(dz, dz_next);
  }
  zone.next(zenc_.backward);
  if (f == 0) {
    enc_.backward(ctx, dz, MatView<T>{}, w0);
  } else {
    const MatView<T> de = de_.mat().rows_block(0, rn), df = df_.mat().rows_block(0, rn * f);
    for (Index w = 0; w < b; ++w) {
      layers::copy_view<T>(dz.rows_block(w * tok, n), de.rows_block(w * n, n));
      layers::copy_view<T>(dz.rows_block(w * tok + n, n * f), df.rows_block(w * n * f, n * f));
    }
    enc_.backward(ctx, de, MatView<T>{}, w0);
    zone.next(zfutr_.backward);
    const bool want = cfg_.exog_grads;
    futr_.backward(
        ctx, df, want ? this->dfutr_.mat().rows_block(0, b * f * (l + cfg_.h)) : MatView<T>{}, w0);
  }
  zone.next(zstats_.backward);
}

template class ITransformer<float>;
template class ITransformer<double>;

}  // namespace shoal::models
