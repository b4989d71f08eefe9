#include "shoal/models/patchtst.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "shoal/layers/view_ops.h"
#include "shoal/models/zones.h"

namespace shoal::models {

namespace {

// neuralforecast's get_activation_fn takes "relu" and "gelu" (or a callable, which a key-value
// option cannot name).
constexpr std::string_view kActivations[] = {"gelu", "relu"};

}  // namespace

void PatchTSTConfig::visit(OptionVisitor& v) {
  v("encoder_layers", encoder_layers, "Transformer encoder layers");
  v("n_heads", n_heads, "Attention heads (hidden_size must be a multiple)");
  v("hidden_size", hidden_size, "Width of each patch's token");
  v("linear_hidden_size", linear_hidden_size, "Width of each encoder layer's feed-forward");
  v("dropout", dropout, "Dropout probability of the tokens and the encoder layers' residuals");
  v("fc_dropout", fc_dropout,
    "Accepted as neuralforecast accepts it; its PatchTST (no pretrain head) reads nothing");
  v("head_dropout", head_dropout, "Dropout probability after the flatten head");
  v("attn_dropout", attn_dropout, "Dropout probability of the attention weights");
  v("patch_len", patch_len, "Steps per patch (at most input_size + stride)");
  v("stride", stride, "Steps between the starts of consecutive patches");
  v("revin", revin, "Normalise each window by its own statistics (RevIN), and back");
  v("revin_affine", revin_affine, "RevIN's learned scale and shift");
  v("revin_subtract_last", revin_subtract_last,
    "RevIN subtracts the window's last value (else its mean)");
  v.choice("activation", activation, kActivations, "Activation of the feed-forwards");
  v("res_attention", res_attention,
    "Residual attention: each layer's scores add the previous layer's");
  v("batch_normalization", batch_normalization,
    "neuralforecast's name for pre-norm encoder layers (the norm before each sublayer)");
  v("learn_pos_embed", learn_pos_embed, "Train the positional embedding (else it stays as drawn)");
}

void PatchTSTConfig::validate_options() const {
  if (encoder_layers < 0)
    option_out_of_range("encoder_layers", "an integer ≥ 0", double(encoder_layers));
  if (n_heads < 1) option_out_of_range("n_heads", "an integer ≥ 1", double(n_heads));
  if (hidden_size < 1 || hidden_size % n_heads != 0)
    option_out_of_range("hidden_size", "a positive multiple of n_heads", double(hidden_size));
  if (linear_hidden_size < 1)
    option_out_of_range("linear_hidden_size", "an integer ≥ 1", double(linear_hidden_size));
  if (patch_len < 1) option_out_of_range("patch_len", "an integer ≥ 1", double(patch_len));
  if (stride < 1) option_out_of_range("stride", "an integer ≥ 1", double(stride));
  for (const auto& [key, p] : {std::pair{"dropout", dropout},
                               {"fc_dropout", fc_dropout},
                               {"head_dropout", head_dropout},
                               {"attn_dropout", attn_dropout}})
    if (!(p >= 0 && p < 1)) option_out_of_range(key, "a probability in [0, 1)", p);
}

template <class T>
PatchTST<T>::PatchTST(Config cfg)
    : ForecastModel(std::move(cfg)),
      revin_({.input_size = cfg_.input_size,
              .affine = cfg_.revin_affine,
              .subtract_last = cfg_.revin_subtract_last}),
      w_p_({.in = cfg_.patch(), .out = cfg_.hidden_size}),
      pos_({.tokens = cfg_.patch_num(), .width = cfg_.hidden_size, .learn = cfg_.learn_pos_embed}),
      drop_in_({.p = cfg_.dropout, .stream = 1}),
      drop_head_({.p = cfg_.head_dropout, .stream = 2}),
      head_({.in = cfg_.hidden_size * cfg_.patch_num(), .out = cfg_.h * cfg_.outputs}) {
  layers_.reserve(size_t(cfg_.encoder_layers));
  for (Index k = 0; k < cfg_.encoder_layers; ++k)
    layers_.emplace_back(
        typename layers::TSTEncoderLayer<T>::Config{.hidden_size = cfg_.hidden_size,
                                                    .n_heads = cfg_.n_heads,
                                                    .linear_hidden_size = cfg_.linear_hidden_size,
                                                    .tokens = cfg_.patch_num(),
                                                    .dropout = cfg_.dropout,
                                                    .attention_dropout = cfg_.attn_dropout,
                                                    .gelu = cfg_.activation == "gelu",
                                                    .res_attention = cfg_.res_attention,
                                                    .pre_norm = cfg_.batch_normalization,
                                                    .stream = uint64_t(3 + 5 * k)});
  z_.resize(layers_.size() + 1);
  zlayers_.resize(layers_.size());
}

template <class T>
void PatchTST<T>::plan(Planner& planner, Index max_batch) {
  set_max_batch(max_batch);
  const Index np = cfg_.patch_num(), e = cfg_.hidden_size, rows = max_batch * np,
              hm = cfg_.h * cfg_.outputs;
  plan_layer(planner, "model.revin_layer.", revin_, max_batch);
  plan_layer(planner, "model.backbone.W_P.", w_p_, rows);
  plan_layer(planner, "model.backbone.", pos_, rows);
  drop_in_.plan(planner, rows);
  for (size_t k = 0; k < layers_.size(); ++k)
    plan_layer(planner, "model.backbone.encoder.layers." + std::to_string(k) + ".", layers_[k],
               rows);
  plan_layer(planner, "model.head.linear.", head_, max_batch);
  drop_head_.plan(planner, max_batch);
  planner.push_scope("act.");
  const Index padded = cfg_.input_size + cfg_.stride;
  planner.buffer(xp_, Region::kActivations, "xp", {max_batch, padded});
  planner.buffer(patches_, Region::kActivations, "patches", {rows, cfg_.patch()});
  if (cfg_.revin && cfg_.revin_affine) {
    planner.buffer(dxp_, Region::kActivationGrads, "dxp", {max_batch, padded});
    planner.buffer(dpatches_, Region::kActivationGrads, "dpatches", {rows, cfg_.patch()});
  }
  for (size_t k = 0; k < z_.size(); ++k)
    planner.buffer(z_[k], Region::kActivations, "z" + std::to_string(k), {rows, e});
  planner.buffer(dz_a_, Region::kActivationGrads, "dz_a", {rows, e});
  planner.buffer(dz_b_, Region::kActivationGrads, "dz_b", {rows, e});
  if (cfg_.res_attention && layers_.size() > 1) {
    planner.buffer(ds_a_, Region::kActivationGrads, "ds_a", {rows * cfg_.n_heads, np});
    planner.buffer(ds_b_, Region::kActivationGrads, "ds_b", {rows * cfg_.n_heads, np});
  }
  planner.buffer(flat_, Region::kActivations, "flat", {max_batch, e * np});
  planner.buffer(dflat_, Region::kActivationGrads, "dflat", {max_batch, e * np});
  planner.buffer(head_out_, Region::kActivations, "head_out", {max_batch, hm});
  planner.buffer(out_, Region::kActivations, "out", {max_batch, hm});
  planner.buffer(dout_, Region::kActivationGrads, "dout", {max_batch, hm});
  planner.pop_scope();
}

template <class T>
void PatchTST<T>::register_zones(profile::Recorder& rec, int model) {
  const double l = double(cfg_.input_size), np = double(cfg_.patch_num());
  zrevin_ = cost_zones(
      rec, model, "revin", 1.0,
      [&](double w) { return cfg_.revin ? revin_.cost(w * l) : profile::Cost{}; },
      [&](double) { return profile::Cost{}; });  // the inverse's: the head zone's time
  zembed_ = cost_zones(
      rec, model, "W_P", np,
      [&](double rows) {
        return w_p_.forward_cost(rows) + pos_.cost(rows) +
               drop_in_.cost(rows, double(cfg_.hidden_size));
      },
      [&](double rows) {
        return w_p_.backward_cost(rows, cfg_.revin && cfg_.revin_affine) + pos_.cost(rows) +
               drop_in_.cost(rows, double(cfg_.hidden_size));
      });
  for (size_t k = 0; k < layers_.size(); ++k)
    zlayers_[k] = block_zones(rec, model, "encoder.layers." + std::to_string(k), np, layers_[k]);
  zhead_ = block_zones(rec, model, "head", 1.0, head_);
}

template <class T>
MatView<T> PatchTST<T>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  check_inputs(in);
  const Index b = in.batch, l = cfg_.input_size, s = cfg_.stride, p = cfg_.patch(),
              np = cfg_.patch_num(), e = cfg_.hidden_size, rows = b * np, w0 = in.first_window;
  profile::ZoneChain zone(ctx.profiler, b);
  const ConstMat<T> x(in.insample_y, b, l);
  const MatView<T> xp = batch_rows(xp_, b);
  zone.next(zrevin_.forward);
  if (cfg_.revin)
    revin_.normalize(x, xp.cols_block(0, l));
  else
    layers::copy_view<T>(x, xp.cols_block(0, l));
  zone.next(zembed_.forward);
  const MatView<T> pm = batch_rows(patches_, rows);
  for (Index w = 0; w < b; ++w) {
    T* r = xp.row(w);
    std::fill(r + l, r + l + s, r[l - 1]);  // ReplicationPad1d((0, stride))
    for (Index j = 0; j < np; ++j) std::copy_n(r + j * s, p, pm.row(w * np + j));
  }
  const MatView<T> z0 = batch_rows(z_[0], rows);
  w_p_.forward(ctx, pm, z0);
  pos_.forward(z0, z0);
  drop_in_.forward(ctx, z0, z0, w0 * np);
  const T* prior = nullptr;
  for (size_t k = 0; k < layers_.size(); ++k) {
    zone.next(zlayers_[k].forward);
    layers_[k].forward(ctx, batch_rows(z_[k], rows), batch_rows(z_[k + 1], rows), w0 * np, prior);
    prior = cfg_.res_attention ? layers_[k].scores.view.data : nullptr;
  }
  zone.next(zhead_.forward);
  // Each window's [Np, E] tokens as neuralforecast flattens them: [E, Np].
  const MatView<T> flat = batch_rows(flat_, b), ho = batch_rows(head_out_, b),
                   out = batch_rows(out_, b);
  layers::transpose_windows<T>(batch_rows(z_.back(), rows), MatView<T>(flat.data, b * e, np), b,
                               false);
  head_.forward(ctx, flat, ho);
  drop_head_.forward(ctx, ho, ho, w0);
  if (cfg_.revin)
    revin_.denormalize(ho, out);
  else
    layers::copy_view<T>(ho, out);
  return MatView<T>(out.data, b * cfg_.h, cfg_.outputs);
}

template <class T>
void PatchTST<T>::backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout) {
  const Index b = in.batch, l = cfg_.input_size, s = cfg_.stride, p = cfg_.patch(),
              np = cfg_.patch_num(), e = cfg_.hidden_size, rows = b * np,
              hm = cfg_.h * cfg_.outputs, w0 = in.first_window;
  SHOAL_DCHECK(dout.rows == b * cfg_.h && dout.cols == cfg_.outputs && dout.contiguous());
  profile::ZoneChain zone(ctx.profiler, b);
  ConstMat<T> d(dout.data, b, hm);
  zone.next(zhead_.backward);
  const MatView<T> dm = batch_rows(dout_, b);
  if (cfg_.revin) {
    revin_.denormalize_backward(batch_rows(head_out_, b), d, dm);
  } else {
    layers::copy_view<T>(d, dm);
  }
  drop_head_.backward(ctx, ConstMat<T>(), ConstMat<T>(), dm, dm, w0);
  const MatView<T> dflat = batch_rows(dflat_, b);
  head_.backward(ctx, batch_rows(flat_, b), ConstMat<T>(), dm, dflat);
  MatView<T> dz = batch_rows(dz_a_, rows), dz_next = batch_rows(dz_b_, rows);
  layers::transpose_windows<T>(MatView<T>(dflat.data, b * e, np), dz, b, false);
  T* ds = nullptr;  // the gradient of the scores of layer k, from layer k + 1
  T* ds_other = cfg_.res_attention && layers_.size() > 1 ? ds_a_.view.data : nullptr;
  T* ds_spare = cfg_.res_attention && layers_.size() > 1 ? ds_b_.view.data : nullptr;
  for (size_t k = layers_.size(); k-- > 0;) {
    zone.next(zlayers_[k].backward);
    T* dprior = k > 0 ? ds_other : nullptr;
    layers_[k].backward(ctx, batch_rows(z_[k], rows), batch_rows(z_[k + 1], rows), dz, dz_next,
                        w0 * np, ds, dprior);
    std::swap(dz, dz_next);
    if (dprior != nullptr) {
      ds = dprior;
      ds_other = ds_spare;
      ds_spare = dprior;
    }
  }
  zone.next(zembed_.backward);
  drop_in_.backward(ctx, ConstMat<T>(), ConstMat<T>(), dz, dz, w0 * np);
  pos_.backward(dz);
  const bool dx = cfg_.revin && cfg_.revin_affine;
  const MatView<T> dpm = dx ? batch_rows(dpatches_, rows) : MatView<T>{};
  w_p_.backward(ctx, batch_rows(patches_, rows), ConstMat<T>(), dz, dpm);
  if (!dx) return;
  // The patches' gradient folded back onto the window (unfold, then the replicated end), for
  // the RevIN affine's gradient.
  const MatView<T> dxp = batch_rows(dxp_, b);
  for (Index w = 0; w < b; ++w) {
    T* r = dxp.row(w);
    std::fill(r, r + l + s, T(0));
    for (Index j = 0; j < np; ++j) {
      const T* g = dpm.row(w * np + j);
      for (Index t = 0; t < p; ++t) r[j * s + t] += g[t];
    }
    for (Index t = l; t < l + s; ++t) r[l - 1] += r[t];
  }
  revin_.normalize_backward(ConstMat<T>(in.insample_y, b, l), dxp.cols_block(0, l));
}

template class PatchTST<float>;
template class PatchTST<double>;

}  // namespace shoal::models
