#include "shoal/layers/transformer_encoder_layer.h"

#include <tuple>

#include "shoal/core/error.h"

namespace shoal::layers {

template <class T>
TransformerEncoderLayer<T>::TransformerEncoderLayer(Config c)
    : cfg(c),
      attention({.hidden_size = c.hidden_size,
                 .n_heads = c.n_heads,
                 .lq = c.tokens,
                 .lk = c.tokens,
                 .causal = c.causal,
                 .attention_dropout = c.attention_dropout,
                 .stream = c.stream}),
      conv1({.in = c.hidden_size,
             .out = feed_forward_width(c.conv_hidden_size, c.hidden_size),
             .act = c.gelu ? Act::kGelu : Act::kRelu,
             .pointwise_conv = true}),
      conv2({.in = feed_forward_width(c.conv_hidden_size, c.hidden_size),
             .out = c.hidden_size,
             .pointwise_conv = true}),
      norm1({.normalized_shape = {c.hidden_size}}),
      norm2({.normalized_shape = {c.hidden_size}}),
      drop_attention({.p = c.dropout, .stream = c.stream + 1}),
      drop_hidden({.p = c.dropout, .stream = c.stream + 2}),
      drop_out({.p = c.dropout, .stream = c.stream + 3}) {}

template <class T>
void TransformerEncoderLayer<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.hidden_size > 0, "an encoder layer needs hidden_size > 0");
  const Index d = cfg.hidden_size, ff = feed_forward_width(cfg.conv_hidden_size, cfg.hidden_size);
  plan_layer(planner, "attention.", attention, max_rows);
  plan_layer(planner, "conv1.", conv1, max_rows);
  plan_layer(planner, "conv2.", conv2, max_rows);
  plan_layer(planner, "norm1.", norm1, max_rows);
  plan_layer(planner, "norm2.", norm2, max_rows);
  drop_attention.plan(planner, max_rows);
  drop_hidden.plan(planner, max_rows);
  drop_out.plan(planner, max_rows);
  for (auto [buffer, name, width] : {std::tuple{&a, "a", d},
                                     {&s1, "s1", d},
                                     {&x1, "x1", d},
                                     {&h, "h", ff},
                                     {&hd, "hd", ff},
                                     {&f, "f", d},
                                     {&s2, "s2", d}})
    planner.buffer(*buffer, Region::kActivations, name, {max_rows, width});
  for (auto [buffer, name, width] :
       {std::tuple{&ds, "ds", d}, {&dx1, "dx1", d}, {&dh, "dh", ff}, {&dtmp, "dtmp", d}})
    planner.buffer(*buffer, Region::kScratch, name, {max_rows, width});
}

template <class T>
void TransformerEncoderLayer<T>::init(RngStream& rng) {
  attention.init(rng);
  conv1.init(rng);
  conv2.init(rng);
  norm1.init(rng);
  norm2.init(rng);
}

template <class T>
void TransformerEncoderLayer<T>::forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index row0) {
  const Index n = x.rows;
  const MatView<T> am = a.mat().rows_block(0, n), s1m = s1.mat().rows_block(0, n),
                   x1m = x1.mat().rows_block(0, n), hm = h.mat().rows_block(0, n),
                   hdm = hd.mat().rows_block(0, n), fm = f.mat().rows_block(0, n),
                   s2m = s2.mat().rows_block(0, n);
  attention.forward(ctx, x, x, am, row0);
  drop_attention.forward(ctx, am, am, row0);
  norm1.forward_residual(ctx, am, x, s1m, x1m);
  conv1.forward(ctx, x1m, hm);
  drop_hidden.forward(ctx, hm, hdm, row0);
  conv2.forward(ctx, hdm, fm);
  drop_out.forward(ctx, fm, fm, row0);
  norm2.forward_residual(ctx, fm, x1m, s2m, y);
}

template <class T>
void TransformerEncoderLayer<T>::backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T>,
                                          ConstMat<T> dy, MatView<T> dx, Index row0) {
  const Index n = x.rows, d = cfg.hidden_size;
  const MatView<T> s1m = s1.mat().rows_block(0, n), x1m = x1.mat().rows_block(0, n),
                   hm = h.mat().rows_block(0, n), hdm = hd.mat().rows_block(0, n),
                   s2m = s2.mat().rows_block(0, n);
  const MatView<T> dsm = ds.mat().rows_block(0, n), dx1m = dx1.mat().rows_block(0, n),
                   dhm = dh.mat().rows_block(0, n), dtm = dtmp.mat().rows_block(0, n);
  // y = norm2(x1 + dropout(f)): ds reaches x1 and, through the dropout, f.
  norm2.backward(ctx, s2m, ConstMat<T>(), dy, dsm);
  drop_out.backward(ctx, ConstMat<T>(), ConstMat<T>(), dsm, dtm, row0);
  conv2.backward(ctx, hdm, ConstMat<T>(), dtm, dhm);
  drop_hidden.backward(ctx, ConstMat<T>(), ConstMat<T>(), dhm, dhm, row0);
  conv1.backward(ctx, x1m, hm, dhm, dx1m);
  for (Index r = 0; r < n; ++r)
    for (Index c = 0; c < d; ++c) dx1m(r, c) += dsm(r, c);
  // x1 = norm1(x + dropout(a)).
  norm1.backward(ctx, s1m, ConstMat<T>(), dx1m, dsm);
  drop_attention.backward(ctx, ConstMat<T>(), ConstMat<T>(), dsm, dtm, row0);
  attention.backward(ctx, x, x, dtm, dx, dx);
  for (Index r = 0; r < n; ++r)
    for (Index c = 0; c < d; ++c) dx(r, c) += dsm(r, c);
}

template <class T>
profile::Cost TransformerEncoderLayer<T>::forward_cost(double rows) const {
  const double d = double(cfg.hidden_size),
               ff = double(feed_forward_width(cfg.conv_hidden_size, cfg.hidden_size));
  return attention.forward_cost(rows) + conv1.forward_cost(rows) + conv2.forward_cost(rows) +
         norm1.forward_cost(rows) + norm2.forward_cost(rows) + drop_attention.cost(rows, d) +
         drop_hidden.cost(rows, ff) + drop_out.cost(rows, d);
}

template <class T>
profile::Cost TransformerEncoderLayer<T>::backward_cost(double rows) const {
  const double d = double(cfg.hidden_size),
               ff = double(feed_forward_width(cfg.conv_hidden_size, cfg.hidden_size));
  return attention.backward_cost(rows) + conv1.backward_cost(rows) + conv2.backward_cost(rows) +
         norm1.backward_cost(rows) + norm2.backward_cost(rows) + drop_attention.cost(rows, d) +
         drop_hidden.cost(rows, ff) + drop_out.cost(rows, d);
}

template struct TransformerEncoderLayer<float>;
template struct TransformerEncoderLayer<double>;

}  // namespace shoal::layers
