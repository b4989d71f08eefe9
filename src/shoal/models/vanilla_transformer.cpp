#include "shoal/models/vanilla_transformer.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "shoal/layers/view_ops.h"
#include "shoal/models/zones.h"

namespace shoal::models {

namespace {

// neuralforecast's VanillaTransformer accepts "relu" and "gelu".
constexpr std::string_view kActivations[] = {"gelu", "relu"};

}  // namespace

void VanillaTransformerConfig::visit(OptionVisitor& v) {
  v("decoder_input_size_multiplier", decoder_input_size_multiplier,
    "Share of the input window the decoder starts from (its last ⌈input_size · this⌉ steps)");
  v("hidden_size", hidden_size, "Width of the tokens (even: the sine/cosine position table)");
  v("dropout", dropout, "Dropout probability (embeddings, attention, encoder and decoder layers)");
  v("n_head", n_head, "Attention heads (each hidden_size / n_head wide)");
  v("conv_hidden_size", conv_hidden_size, "Width of each layer's feed-forward");
  v.choice("activation", activation, kActivations, "Activation of the feed-forwards");
  v("encoder_layers", encoder_layers, "Transformer encoder layers");
  v("decoder_layers", decoder_layers, "Transformer decoder layers");
}

Index VanillaTransformerConfig::label_len() const {
  return static_cast<Index>(std::ceil(double(input_size) * decoder_input_size_multiplier));
}

void VanillaTransformerConfig::validate_options() const {
  if (!(decoder_input_size_multiplier > 0 && decoder_input_size_multiplier < 1))
    option_out_of_range("decoder_input_size_multiplier", "a share in (0, 1)",
                        decoder_input_size_multiplier);
  if (n_head < 1) option_out_of_range("n_head", "an integer ≥ 1", double(n_head));
  // hidden_size / n_head (rounded down) is each head's width; the position table pairs sines
  // and cosines, so neuralforecast fails on an odd width.
  if (hidden_size < n_head || hidden_size % 2 != 0)
    option_out_of_range("hidden_size", "an even integer ≥ n_head", double(hidden_size));
  if (conv_hidden_size < 0)
    option_out_of_range("conv_hidden_size", "an integer ≥ 0 (0: 4 · hidden_size)",
                        double(conv_hidden_size));
  if (encoder_layers < 0)
    option_out_of_range("encoder_layers", "an integer ≥ 0", double(encoder_layers));
  if (decoder_layers < 0)
    option_out_of_range("decoder_layers", "an integer ≥ 0", double(decoder_layers));
  if (!(dropout >= 0 && dropout < 1))
    option_out_of_range("dropout", "a probability in [0, 1)", dropout);
}

template <class T>
VanillaTransformer<T>::VanillaTransformer(Config cfg)
    : ForecastModel(std::move(cfg)),
      enc_embedding_({.exog = cfg_.futr_exog,
                      .tokens = cfg_.input_size,
                      .hidden_size = cfg_.hidden_size,
                      .dropout = cfg_.dropout,
                      .stream = 1}),
      dec_embedding_({.exog = cfg_.futr_exog,
                      .tokens = cfg_.decoder_tokens(),
                      .hidden_size = cfg_.hidden_size,
                      .dropout = cfg_.dropout,
                      .stream = 2}),
      encoder_norm_({.normalized_shape = {cfg_.hidden_size}}),
      decoder_norm_({.normalized_shape = {cfg_.hidden_size}}),
      projection_({.in = cfg_.hidden_size, .out = cfg_.outputs}) {
  // neuralforecast's check, with its bounds: the decoder starts inside the window.
  const Index label = cfg_.label_len();
  SHOAL_CHECK(label > 0 && label < cfg_.input_size,
              "VanillaTransformer: decoder_input_size_multiplier={} gives {} decoder input steps "
              "of input_size={}; it must give at least 1 and fewer than input_size",
              cfg_.decoder_input_size_multiplier, label, cfg_.input_size);
  const bool gelu = cfg_.activation == "gelu";
  encoder_.reserve(size_t(cfg_.encoder_layers));
  for (Index k = 0; k < cfg_.encoder_layers; ++k)
    encoder_.emplace_back(typename layers::TransformerEncoderLayer<T>::Config{
        .hidden_size = cfg_.hidden_size,
        .n_heads = cfg_.n_head,
        .conv_hidden_size = cfg_.conv_hidden_size,
        .tokens = cfg_.input_size,
        .dropout = cfg_.dropout,
        .attention_dropout = cfg_.dropout,
        .gelu = gelu,
        .stream = uint64_t(3 + 4 * k)});
  decoder_.reserve(size_t(cfg_.decoder_layers));
  for (Index k = 0; k < cfg_.decoder_layers; ++k)
    decoder_.emplace_back(typename layers::TransformerDecoderLayer<T>::Config{
        .hidden_size = cfg_.hidden_size,
        .n_heads = cfg_.n_head,
        .conv_hidden_size = cfg_.conv_hidden_size,
        .tokens = cfg_.decoder_tokens(),
        .cross_tokens = cfg_.input_size,
        .dropout = cfg_.dropout,
        .attention_dropout = cfg_.dropout,
        .gelu = gelu,
        .causal = false,
        .stream = uint64_t(3 + 4 * cfg_.encoder_layers + 6 * k)});
  ze_.resize(encoder_.size() + 1);
  zd_.resize(decoder_.size() + 1);
  zencoder_.resize(encoder_.size());  // no zones until register_zones
  zdecoder_.resize(decoder_.size());
}

template <class T>
void VanillaTransformer<T>::plan(Planner& planner, Index max_batch) {
  set_max_batch(max_batch);
  const Index l = cfg_.input_size, e = cfg_.hidden_size, m = cfg_.outputs, re = max_batch * l,
              rd = max_batch * cfg_.decoder_tokens();
  plan_layer(planner, "enc_embedding.", enc_embedding_, re);
  plan_layer(planner, "dec_embedding.", dec_embedding_, rd);
  for (size_t k = 0; k < encoder_.size(); ++k)
    plan_layer(planner, "encoder.attn_layers." + std::to_string(k) + ".", encoder_[k], re);
  plan_layer(planner, "encoder.norm.", encoder_norm_, re);
  for (size_t k = 0; k < decoder_.size(); ++k)
    plan_layer(planner, "decoder.layers." + std::to_string(k) + ".", decoder_[k], rd);
  plan_layer(planner, "decoder.norm.", decoder_norm_, rd);
  plan_layer(planner, "decoder.projection.", projection_, rd);
  planner.push_scope("act.");
  for (size_t k = 0; k < ze_.size(); ++k)
    planner.buffer(ze_[k], Region::kActivations, "ze" + std::to_string(k), {re, e});
  planner.buffer(memory_, Region::kActivations, "memory", {re, e});
  planner.buffer(dmemory_, Region::kActivationGrads, "dmemory", {re, e});
  planner.buffer(dze_a_, Region::kActivationGrads, "dze_a", {re, e});
  planner.buffer(dze_b_, Region::kActivationGrads, "dze_b", {re, e});
  planner.buffer(x_dec_, Region::kActivations, "x_dec", {rd, 1});
  for (size_t k = 0; k < zd_.size(); ++k)
    planner.buffer(zd_[k], Region::kActivations, "zd" + std::to_string(k), {rd, e});
  planner.buffer(dzd_a_, Region::kActivationGrads, "dzd_a", {rd, e});
  planner.buffer(dzd_b_, Region::kActivationGrads, "dzd_b", {rd, e});
  planner.buffer(dn_, Region::kActivations, "dn", {rd, e});
  planner.buffer(ddn_, Region::kActivationGrads, "ddn", {rd, e});
  planner.buffer(proj_, Region::kActivations, "proj", {rd, m});
  planner.buffer(dproj_, Region::kActivationGrads, "dproj", {rd, m});
  planner.buffer(out_, Region::kActivations, "out", {max_batch * cfg_.h, m});
  if (cfg_.exog_grads && cfg_.futr_exog > 0)
    planner.buffer(this->dfutr_, Region::kActivationGrads, "dfutr",
                   {max_batch * cfg_.futr_exog * (l + cfg_.h), 1});
  planner.pop_scope();
}

template <class T>
void VanillaTransformer<T>::register_zones(profile::Recorder& rec, int model) {
  const double l = double(cfg_.input_size), ld = double(cfg_.decoder_tokens());
  zenc_ = cost_zones(
      rec, model, "embeddings", 1.0,
      [&](double w) {
        return enc_embedding_.forward_cost(w * l) + dec_embedding_.forward_cost(w * ld);
      },
      [&](double w) {
        return enc_embedding_.backward_cost(w * l) + dec_embedding_.backward_cost(w * ld);
      });
  for (size_t k = 0; k < encoder_.size(); ++k)
    zencoder_[k] =
        block_zones(rec, model, "encoder.attn_layers." + std::to_string(k), l, encoder_[k]);
  zenc_norm_ = block_zones(rec, model, "encoder.norm", l, encoder_norm_);
  for (size_t k = 0; k < decoder_.size(); ++k)
    zdecoder_[k] = block_zones(rec, model, "decoder.layers." + std::to_string(k), ld, decoder_[k]);
  zhead_ = cost_zones(
      rec, model, "decoder.head", ld,
      [&](double rows) {
        return decoder_norm_.forward_cost(rows) + projection_.forward_cost(rows);
      },
      [&](double rows) {
        return decoder_norm_.backward_cost(rows) + projection_.backward_cost(rows);
      });
}

template <class T>
MatView<T> VanillaTransformer<T>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  check_inputs(in);
  SHOAL_CHECK(in.hist_exog == nullptr && in.stat_exog == nullptr,
              "VanillaTransformer takes future exogenous inputs only");
  const Index b = in.batch, l = cfg_.input_size, h = cfg_.h, m = cfg_.outputs,
              label = cfg_.label_len(), ld = cfg_.decoder_tokens(), re = b * l, rd = b * ld,
              w0 = in.first_window;
  profile::ZoneChain zone(ctx.profiler, b);
  const ConstMat<T> x(in.insample_y, re, 1);
  zone.next(zenc_.forward);
  enc_embedding_.forward(ctx, x, {.data = in.futr_exog, .steps = l + h, .t0 = 0},
                         batch_rows(ze_[0], re), w0 * l);
  // The decoder's values: each window's last `label` steps, then H zeros.
  const MatView<T> xd = batch_rows(x_dec_, rd);
  for (Index w = 0; w < b; ++w) {
    T* r = xd.data + w * ld;
    std::memcpy(r, in.insample_y + w * l + (l - label), sizeof(T) * size_t(label));
    std::fill(r + label, r + ld, T(0));
  }
  dec_embedding_.forward(ctx, xd, {.data = in.futr_exog, .steps = l + h, .t0 = l - label},
                         batch_rows(zd_[0], rd), w0 * ld);
  for (size_t k = 0; k < encoder_.size(); ++k) {
    zone.next(zencoder_[k].forward);
    encoder_[k].forward(ctx, batch_rows(ze_[k], re), batch_rows(ze_[k + 1], re), w0 * l);
  }
  zone.next(zenc_norm_.forward);
  const MatView<T> mem = batch_rows(memory_, re);
  encoder_norm_.forward(ctx, batch_rows(ze_.back(), re), mem);
  for (size_t k = 0; k < decoder_.size(); ++k) {
    zone.next(zdecoder_[k].forward);
    decoder_[k].forward(ctx, batch_rows(zd_[k], rd), mem, batch_rows(zd_[k + 1], rd), w0 * ld);
  }
  zone.next(zhead_.forward);
  const MatView<T> dn = batch_rows(dn_, rd), proj = batch_rows(proj_, rd),
                   out = batch_rows(out_, b * h);
  decoder_norm_.forward(ctx, batch_rows(zd_.back(), rd), dn);
  projection_.forward(ctx, dn, proj);
  for (Index w = 0; w < b; ++w)  // the last H tokens of each window are its forecast
    layers::copy_view<T>(proj.rows_block(w * ld + label, h), out.rows_block(w * h, h));
  return MatView<T>(out.data, b * h, m);
}

template <class T>
void VanillaTransformer<T>::backward(const Ctx& ctx, const ForecastInputs<T>& in,
                                     ConstMat<T> dout) {
  const Index b = in.batch, l = cfg_.input_size, h = cfg_.h, m = cfg_.outputs,
              label = cfg_.label_len(), ld = cfg_.decoder_tokens(), re = b * l, rd = b * ld,
              e = cfg_.hidden_size, w0 = in.first_window, f = cfg_.futr_exog;
  SHOAL_DCHECK(dout.rows == b * h && dout.cols == m && dout.contiguous());
  profile::ZoneChain zone(ctx.profiler, b);
  zone.next(zhead_.backward);
  const MatView<T> dproj = batch_rows(dproj_, rd), ddn = batch_rows(ddn_, rd);
  for (Index w = 0; w < b; ++w) {  // the decoder's first `label` tokens reach no forecast
    std::memset(dproj.row(w * ld), 0, sizeof(T) * size_t(label * m));
    layers::copy_view<T>(dout.rows_block(w * h, h), dproj.rows_block(w * ld + label, h));
  }
  projection_.backward(ctx, batch_rows(dn_, rd), ConstMat<T>(), dproj, ddn);
  MatView<T> dz = batch_rows(dzd_a_, rd), dz_next = batch_rows(dzd_b_, rd);
  decoder_norm_.backward(ctx, batch_rows(zd_.back(), rd), ConstMat<T>(), ddn, dz);
  const MatView<T> mem = batch_rows(memory_, re), dmem = batch_rows(dmemory_, re);
  std::memset(dmem.data, 0, sizeof(T) * size_t(re * e));
  for (size_t k = decoder_.size(); k-- > 0;) {
    zone.next(zdecoder_[k].backward);
    decoder_[k].backward(ctx, batch_rows(zd_[k], rd), mem, dz, dz_next, dmem, w0 * ld);
    std::swap(dz, dz_next);
  }
  const bool want = cfg_.exog_grads && f > 0;
  T* dfutr = want ? this->dfutr_.view.data : nullptr;
  if (want) std::memset(dfutr, 0, sizeof(T) * size_t(b * f * (l + h)));
  zone.next(zenc_.backward);
  dec_embedding_.backward(ctx, batch_rows(x_dec_, rd),
                          {.data = in.futr_exog, .steps = l + h, .t0 = l - label}, dz, dfutr,
                          w0 * ld);
  zone.next(zenc_norm_.backward);
  MatView<T> de = batch_rows(dze_a_, re), de_next = batch_rows(dze_b_, re);
  encoder_norm_.backward(ctx, batch_rows(ze_.back(), re), ConstMat<T>(), dmem, de);
  for (size_t k = encoder_.size(); k-- > 0;) {
    zone.next(zencoder_[k].backward);
    encoder_[k].backward(ctx, batch_rows(ze_[k], re), batch_rows(ze_[k + 1], re), de, de_next,
                         w0 * l);
    std::swap(de, de_next);
  }
  zone.next(zenc_.backward);
  enc_embedding_.backward(ctx, ConstMat<T>(in.insample_y, re, 1),
                          {.data = in.futr_exog, .steps = l + h, .t0 = 0}, de, dfutr, w0 * l);
}

template class VanillaTransformer<float>;
template class VanillaTransformer<double>;

}  // namespace shoal::models
