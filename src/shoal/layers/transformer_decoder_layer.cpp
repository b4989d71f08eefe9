#include "shoal/layers/transformer_decoder_layer.h"

#include <tuple>

#include "shoal/core/error.h"
#include "shoal/layers/view_ops.h"

namespace shoal::layers {

template <class T>
TransformerDecoderLayer<T>::TransformerDecoderLayer(Config c)
    : cfg(c),
      self_attention({.hidden_size = c.hidden_size,
                      .n_heads = c.n_heads,
                      .lq = c.tokens,
                      .lk = c.tokens,
                      .causal = c.causal,
                      .attention_dropout = c.attention_dropout,
                      .stream = c.stream}),
      cross_attention({.hidden_size = c.hidden_size,
                       .n_heads = c.n_heads,
                       .lq = c.tokens,
                       .lk = c.cross_tokens,
                       .attention_dropout = c.attention_dropout,
                       .stream = c.stream + 1}),
      conv1({.in = c.hidden_size,
             .out = feed_forward_width(c.conv_hidden_size, c.hidden_size),
             .act = c.gelu ? Act::kGelu : Act::kRelu,
             .pointwise_conv = true}),
      conv2({.in = feed_forward_width(c.conv_hidden_size, c.hidden_size),
             .out = c.hidden_size,
             .pointwise_conv = true}),
      norm1({.normalized_shape = {c.hidden_size}}),
      norm2({.normalized_shape = {c.hidden_size}}),
      norm3({.normalized_shape = {c.hidden_size}}),
      drop_self({.p = c.dropout, .stream = c.stream + 2}),
      drop_cross({.p = c.dropout, .stream = c.stream + 3}),
      drop_hidden({.p = c.dropout, .stream = c.stream + 4}),
      drop_out({.p = c.dropout, .stream = c.stream + 5}) {}

template <class T>
void TransformerDecoderLayer<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.hidden_size > 0, "a decoder layer needs hidden_size > 0");
  SHOAL_CHECK(cfg.tokens > 0 && cfg.cross_tokens > 0 && max_rows % cfg.tokens == 0,
              "a decoder layer plans whole windows of {} tokens, got {} rows", cfg.tokens,
              max_rows);
  const Index d = cfg.hidden_size, ff = feed_forward_width(cfg.conv_hidden_size, cfg.hidden_size),
              cross_rows = max_rows / cfg.tokens * cfg.cross_tokens;
  plan_layer(planner, "self_attention.", self_attention, max_rows);
  plan_layer(planner, "cross_attention.", cross_attention, max_rows);
  plan_layer(planner, "conv1.", conv1, max_rows);
  plan_layer(planner, "conv2.", conv2, max_rows);
  plan_layer(planner, "norm1.", norm1, max_rows);
  plan_layer(planner, "norm2.", norm2, max_rows);
  plan_layer(planner, "norm3.", norm3, max_rows);
  drop_self.plan(planner, max_rows);
  drop_cross.plan(planner, max_rows);
  drop_hidden.plan(planner, max_rows);
  drop_out.plan(planner, max_rows);
  for (auto [buffer, name, width] : {std::tuple{&a, "a", d},
                                     {&s1, "s1", d},
                                     {&x1, "x1", d},
                                     {&ca, "ca", d},
                                     {&s2, "s2", d},
                                     {&x2, "x2", d},
                                     {&h, "h", ff},
                                     {&hd, "hd", ff},
                                     {&f, "f", d},
                                     {&s3, "s3", d}})
    planner.buffer(*buffer, Region::kActivations, name, {max_rows, width});
  for (auto [buffer, name, width] : {std::tuple{&ds, "ds", d},
                                     {&dx1, "dx1", d},
                                     {&dx2, "dx2", d},
                                     {&dh, "dh", ff},
                                     {&dtmp, "dtmp", d}})
    planner.buffer(*buffer, Region::kScratch, name, {max_rows, width});
  planner.buffer(dcross_tmp, Region::kScratch, "dcross", {cross_rows, d});
}

template <class T>
void TransformerDecoderLayer<T>::init(RngStream& rng) {
  self_attention.init(rng);
  cross_attention.init(rng);
  conv1.init(rng);
  conv2.init(rng);
  norm1.init(rng);
  norm2.init(rng);
  norm3.init(rng);
}

template <class T>
void TransformerDecoderLayer<T>::forward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> cross,
                                         MatView<T> y, Index row0) {
  const Index n = x.rows;
  auto rows = [&](Buffer<T>& b) { return b.mat().rows_block(0, n); };
  const MatView<T> am = rows(a), s1m = rows(s1), x1m = rows(x1), cm = rows(ca), s2m = rows(s2),
                   x2m = rows(x2), hm = rows(h), hdm = rows(hd), fm = rows(f), s3m = rows(s3);
  self_attention.forward(ctx, x, x, am, row0);
  drop_self.forward(ctx, am, am, row0);
  norm1.forward_residual(ctx, am, x, s1m, x1m);
  cross_attention.forward(ctx, x1m, cross, cm, row0);
  drop_cross.forward(ctx, cm, cm, row0);
  norm2.forward_residual(ctx, cm, x1m, s2m, x2m);
  conv1.forward(ctx, x2m, hm);
  drop_hidden.forward(ctx, hm, hdm, row0);
  conv2.forward(ctx, hdm, fm);
  drop_out.forward(ctx, fm, fm, row0);
  norm3.forward_residual(ctx, fm, x2m, s3m, y);
}

template <class T>
void TransformerDecoderLayer<T>::backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> cross,
                                          ConstMat<T> dy, MatView<T> dx, MatView<T> dcross,
                                          Index row0) {
  const Index n = x.rows;
  auto rows = [&](Buffer<T>& b) { return b.mat().rows_block(0, n); };
  const MatView<T> s1m = rows(s1), x1m = rows(x1), s2m = rows(s2), x2m = rows(x2), hm = rows(h),
                   hdm = rows(hd), s3m = rows(s3);
  const MatView<T> dsm = rows(ds), dx1m = rows(dx1), dx2m = rows(dx2), dhm = rows(dh),
                   dtm = rows(dtmp), dcm = dcross_tmp.mat().rows_block(0, cross.rows);
  // y = norm3(x2 + dropout(f)): ds reaches x2 and, through the dropouts and convs, x2 again.
  norm3.backward(ctx, s3m, ConstMat<T>(), dy, dsm);
  drop_out.backward(ctx, ConstMat<T>(), ConstMat<T>(), dsm, dtm, row0);
  conv2.backward(ctx, hdm, ConstMat<T>(), dtm, dhm);
  drop_hidden.backward(ctx, ConstMat<T>(), ConstMat<T>(), dhm, dhm, row0);
  conv1.backward(ctx, x2m, hm, dhm, dx2m);
  add_into<T>(dsm, dx2m);
  // x2 = norm2(x1 + dropout(CrossAttention(x1, cross))).
  norm2.backward(ctx, s2m, ConstMat<T>(), dx2m, dsm);
  drop_cross.backward(ctx, ConstMat<T>(), ConstMat<T>(), dsm, dtm, row0);
  cross_attention.backward(ctx, x1m, cross, dtm, dx1m, dcm);
  add_into<T>(dcm, dcross);
  add_into<T>(dsm, dx1m);
  // x1 = norm1(x + dropout(SelfAttention(x, x))).
  norm1.backward(ctx, s1m, ConstMat<T>(), dx1m, dsm);
  drop_self.backward(ctx, ConstMat<T>(), ConstMat<T>(), dsm, dtm, row0);
  self_attention.backward(ctx, x, x, dtm, dx, dx);
  add_into<T>(dsm, dx);
}

template <class T>
profile::Cost TransformerDecoderLayer<T>::forward_cost(double rows) const {
  const double d = double(cfg.hidden_size),
               ff = double(feed_forward_width(cfg.conv_hidden_size, cfg.hidden_size));
  return self_attention.forward_cost(rows) + cross_attention.forward_cost(rows) +
         conv1.forward_cost(rows) + conv2.forward_cost(rows) + norm1.forward_cost(rows) +
         norm2.forward_cost(rows) + norm3.forward_cost(rows) + drop_self.cost(rows, d) +
         drop_cross.cost(rows, d) + drop_hidden.cost(rows, ff) + drop_out.cost(rows, d);
}

template <class T>
profile::Cost TransformerDecoderLayer<T>::backward_cost(double rows) const {
  const double d = double(cfg.hidden_size),
               ff = double(feed_forward_width(cfg.conv_hidden_size, cfg.hidden_size));
  return self_attention.backward_cost(rows) + cross_attention.backward_cost(rows) +
         conv1.backward_cost(rows) + conv2.backward_cost(rows) + norm1.backward_cost(rows) +
         norm2.backward_cost(rows) + norm3.backward_cost(rows) + drop_self.cost(rows, d) +
         drop_cross.cost(rows, d) + drop_hidden.cost(rows, ff) + drop_out.cost(rows, d);
}

template struct TransformerDecoderLayer<float>;
template struct TransformerDecoderLayer<double>;

}  // namespace shoal::layers
