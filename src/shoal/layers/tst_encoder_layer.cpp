#include "shoal/layers/tst_encoder_layer.h"

#include <cmath>
#include <tuple>

#include "shoal/core/error.h"
#include "shoal/layers/view_ops.h"

namespace shoal::layers {

namespace {

// The [B, L, H, E] operand over a [B·L, H·E] matrix.
template <class T>
kernels::AttentionOperand<T> heads_of(MatView<T> m, Index tokens, Index width) {
  return {m.data, m.ld, tokens * m.ld, width};
}

}  // namespace

template <class T>
TSTEncoderLayer<T>::TSTEncoderLayer(Config c)
    : cfg(c),
      w_q({.in = c.hidden_size, .out = c.hidden_size}),
      w_k({.in = c.hidden_size, .out = c.hidden_size}),
      w_v({.in = c.hidden_size, .out = c.hidden_size}),
      to_out({.in = c.hidden_size, .out = c.hidden_size}),
      ff0({.in = c.hidden_size,
           .out = c.linear_hidden_size,
           .act = c.gelu ? Act::kGelu : Act::kRelu}),
      ff3({.in = c.linear_hidden_size, .out = c.hidden_size}),
      norm_attn({.num_features = c.hidden_size}),
      norm_ffn({.num_features = c.hidden_size}),
      drop_probs({.p = c.attention_dropout, .stream = c.stream}),
      drop_proj({.p = c.dropout, .stream = c.stream + 1}),
      drop_attn({.p = c.dropout, .stream = c.stream + 2}),
      drop_ff({.p = c.dropout, .stream = c.stream + 3}),
      drop_ffn({.p = c.dropout, .stream = c.stream + 4}) {}

template <class T>
kernels::AttentionShape TSTEncoderLayer<T>::shape(Index windows) const {
  const Index e = cfg.hidden_size / cfg.n_heads;
  // neuralforecast keeps head_dim ** -0.5 as a float32 parameter: its double run reads that
  // float, so the scale is rounded to float here for every T.
  return {.batch = windows,
          .heads = cfg.n_heads,
          .lq = cfg.tokens,
          .lk = cfg.tokens,
          .d = e,
          .dv = e,
          .causal = false,
          .scale = double(float(std::pow(double(e), -0.5)))};
}

template <class T>
void TSTEncoderLayer<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.hidden_size > 0 && cfg.n_heads > 0 && cfg.hidden_size % cfg.n_heads == 0,
              "PatchTST's hidden_size ({}) must be a multiple of n_heads ({})", cfg.hidden_size,
              cfg.n_heads);
  SHOAL_CHECK(cfg.tokens > 0 && max_rows % cfg.tokens == 0,
              "an encoder layer plans whole windows of {} patches, got {} rows", cfg.tokens,
              max_rows);
  const Index d = cfg.hidden_size, ff = cfg.linear_hidden_size,
              pairs = score_rows(max_rows / cfg.tokens);
  plan_layer(planner, "self_attn.W_Q.", w_q, max_rows);
  plan_layer(planner, "self_attn.W_K.", w_k, max_rows);
  plan_layer(planner, "self_attn.W_V.", w_v, max_rows);
  plan_layer(planner, "self_attn.to_out.0.", to_out, max_rows);
  plan_layer(planner, "norm_attn.1.", norm_attn, max_rows);
  plan_layer(planner, "ff.0.", ff0, max_rows);
  plan_layer(planner, "ff.3.", ff3, max_rows);
  plan_layer(planner, "norm_ffn.1.", norm_ffn, max_rows);
  drop_probs.plan(planner, pairs);
  for (Dropout<T>* drop : {&drop_proj, &drop_attn, &drop_ff, &drop_ffn})
    drop->plan(planner, max_rows);
  for (auto [buffer, name, width] : {std::tuple{&u, "u", d},
                                     {&q, "q", d},
                                     {&k, "k", d},
                                     {&v, "v", d},
                                     {&heads, "heads", d},
                                     {&a, "a", d},
                                     {&s1, "s1", d},
                                     {&x1, "x1", d},
                                     {&h, "h", ff},
                                     {&hd, "hd", ff},
                                     {&f, "f", d},
                                     {&s2, "s2", d}})
    planner.buffer(*buffer, Region::kActivations, name, {max_rows, width});
  planner.buffer(probs, Region::kActivations, "probs", {pairs, cfg.tokens});
  if (cfg.attention_dropout > 0)
    planner.buffer(mask, Region::kActivations, "mask", {pairs, cfg.tokens});
  if (cfg.res_attention)
    planner.buffer(scores, Region::kActivations, "scores", {pairs, cfg.tokens});
  for (auto [buffer, name, width] : {std::tuple{&dq, "dq", d},
                                     {&dk, "dk", d},
                                     {&dv, "dv", d},
                                     {&dheads, "dheads", d},
                                     {&da, "da", d},
                                     {&ds, "ds", d},
                                     {&dx1, "dx1", d},
                                     {&dh, "dh", ff},
                                     {&dg, "dg", d}})
    planner.buffer(*buffer, Region::kScratch, name, {max_rows, width});
  planner.buffer(scratch, Region::kScratch, "attention",
                 {Index(kernels::attention_scratch(shape(1)))});
}

template <class T>
void TSTEncoderLayer<T>::init(RngStream& rng) {
  w_q.init(rng);
  w_k.init(rng);
  w_v.init(rng);
  to_out.init(rng);
  norm_attn.init(rng);
  ff0.init(rng);
  ff3.init(rng);
  norm_ffn.init(rng);
}

template <class T>
void TSTEncoderLayer<T>::forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index row0,
                                 const T* prior) {
  const Index n = x.rows, windows = n / cfg.tokens, e = cfg.hidden_size / cfg.n_heads;
  auto rows = [&](const Buffer<T>& b) { return b.mat().rows_block(0, n); };
  ConstMat<T> in = x;  // the attention's input and its residual
  if (cfg.pre_norm) {
    norm_attn.forward(ctx, x, rows(u));
    in = rows(u);
  }
  w_q.forward(ctx, in, rows(q));
  w_k.forward(ctx, in, rows(k));
  w_v.forward(ctx, in, rows(v));
  const T* drop = nullptr;
  if (cfg.attention_dropout > 0 && ctx.training) {
    const Index pairs = score_rows(windows);
    const MatView<T> mm = mask.mat().rows_block(0, pairs);
    for (Index r = 0; r < pairs; ++r)
      for (Index c = 0; c < cfg.tokens; ++c) mm(r, c) = T(1);
    drop_probs.forward(ctx, mm, mm, row0 * cfg.n_heads);  // (row0 / L) windows of H·L rows
    drop = mm.data;
  }
  kernels::attention_forward<T>(
      shape(windows), heads_of<const T>(rows(q), cfg.tokens, e),
      heads_of<const T>(rows(k), cfg.tokens, e), heads_of<const T>(rows(v), cfg.tokens, e),
      heads_of<T>(rows(heads), cfg.tokens, e), probs.view.data, drop, scratch.view.data,
      {.on = cfg.res_attention, .prior = prior, .scores = scores.view.data});
  const MatView<T> am = rows(a), s1m = rows(s1), x1m = rows(x1);
  to_out.forward(ctx, rows(heads), am);
  drop_proj.forward(ctx, am, am, row0);
  drop_attn.forward(ctx, am, am, row0);
  for (Index r = 0; r < n; ++r)
    for (Index c = 0; c < cfg.hidden_size; ++c) s1m(r, c) = in(r, c) + am(r, c);
  (cfg.pre_norm ? norm_ffn : norm_attn).forward(ctx, s1m, x1m);
  const MatView<T> fm = rows(f);
  ff0.forward(ctx, x1m, rows(h));
  drop_ff.forward(ctx, rows(h), rows(hd), row0);
  ff3.forward(ctx, rows(hd), fm);
  drop_ffn.forward(ctx, fm, fm, row0);
  const MatView<T> sum = cfg.pre_norm ? y : rows(s2);
  for (Index r = 0; r < n; ++r)
    for (Index c = 0; c < cfg.hidden_size; ++c) sum(r, c) = x1m(r, c) + fm(r, c);
  if (!cfg.pre_norm) norm_ffn.forward(ctx, sum, y);
}

template <class T>
void TSTEncoderLayer<T>::backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy,
                                  MatView<T> dx, Index row0, const T* dscores, T* dprior) {
  const Index n = x.rows, windows = n / cfg.tokens, e = cfg.hidden_size / cfg.n_heads;
  auto rows = [&](const Buffer<T>& b) { return b.mat().rows_block(0, n); };
  const MatView<T> dx1m = rows(dx1), dfm = rows(dg), dhm = rows(dh), dsm = rows(ds), dam = rows(da);
  // The feed-forward's sum: x1 + drop(f), normed after (post-norm) or not (pre-norm).
  ConstMat<T> dsum = dy;
  if (!cfg.pre_norm) {
    norm_ffn.backward(ctx, rows(s2), y, dy, dsm);
    dsum = dsm;
  }
  drop_ffn.backward(ctx, ConstMat<T>(), ConstMat<T>(), dsum, dfm, row0);
  ff3.backward(ctx, rows(hd), ConstMat<T>(), dfm, dhm);
  drop_ff.backward(ctx, ConstMat<T>(), ConstMat<T>(), dhm, dhm, row0);
  ff0.backward(ctx, rows(x1), rows(h), dhm, dx1m);
  add_into<T>(dsum, dx1m);
  // x1 = norm(in + drop(drop(a))): ds reaches the residual input and the attention.
  (cfg.pre_norm ? norm_ffn : norm_attn).backward(ctx, rows(s1), rows(x1), dx1m, dsm);
  drop_attn.backward(ctx, ConstMat<T>(), ConstMat<T>(), dsm, dam, row0);
  drop_proj.backward(ctx, ConstMat<T>(), ConstMat<T>(), dam, dam, row0);
  to_out.backward(ctx, rows(heads), ConstMat<T>(), dam, rows(dheads));
  const T* drop =
      cfg.attention_dropout > 0 && ctx.training ? mask.view.data : static_cast<const T*>(nullptr);
  kernels::attention_backward<T>(
      shape(windows), heads_of<const T>(rows(q), cfg.tokens, e),
      heads_of<const T>(rows(k), cfg.tokens, e), heads_of<const T>(rows(v), cfg.tokens, e),
      probs.view.data, drop, heads_of<const T>(rows(dheads), cfg.tokens, e),
      heads_of<T>(rows(dq), cfg.tokens, e), heads_of<T>(rows(dk), cfg.tokens, e),
      heads_of<T>(rows(dv), cfg.tokens, e), scratch.view.data,
      {.on = cfg.res_attention, .dscores = dscores, .dprior = dprior});
  ConstMat<T> in = x;
  const MatView<T> din = cfg.pre_norm ? dx1m : dx;  // dx1 is free again
  if (cfg.pre_norm) in = rows(u);
  w_q.backward(ctx, in, ConstMat<T>(), rows(dq), din);
  w_k.backward(ctx, in, ConstMat<T>(), rows(dk), dam);
  add_into<T>(dam, din);
  w_v.backward(ctx, in, ConstMat<T>(), rows(dv), dam);
  add_into<T>(dam, din);
  add_into<T>(dsm, din);
  if (cfg.pre_norm) norm_attn.backward(ctx, x, in, din, dx);
}

template <class T>
profile::Cost TSTEncoderLayer<T>::forward_cost(double rows) const {
  const double d = double(cfg.hidden_size), ff = double(cfg.linear_hidden_size),
               windows = rows / double(cfg.tokens);
  profile::Cost c = w_q.forward_cost(rows) + w_k.forward_cost(rows) + w_v.forward_cost(rows) +
                    to_out.forward_cost(rows) + ff0.forward_cost(rows) + ff3.forward_cost(rows) +
                    norm_attn.forward_cost(rows) + norm_ffn.forward_cost(rows) +
                    drop_proj.cost(rows, d) + drop_attn.cost(rows, d) + drop_ff.cost(rows, ff) +
                    drop_ffn.cost(rows, d);
  c.flops += kernels::attention_flops(shape(1), false) * windows;
  return c;
}

template <class T>
profile::Cost TSTEncoderLayer<T>::backward_cost(double rows) const {
  const double d = double(cfg.hidden_size), ff = double(cfg.linear_hidden_size),
               windows = rows / double(cfg.tokens);
  profile::Cost c = w_q.backward_cost(rows) + w_k.backward_cost(rows) + w_v.backward_cost(rows) +
                    to_out.backward_cost(rows) + ff0.backward_cost(rows) + ff3.backward_cost(rows) +
                    norm_attn.backward_cost(rows) + norm_ffn.backward_cost(rows) +
                    drop_proj.cost(rows, d) + drop_attn.cost(rows, d) + drop_ff.cost(rows, ff) +
                    drop_ffn.cost(rows, d);
  c.flops += kernels::attention_flops(shape(1), true) * windows;
  return c;
}

template struct TSTEncoderLayer<float>;
template struct TSTEncoderLayer<double>;

}  // namespace shoal::layers
