#include "shoal/layers/attention_layer.h"

#include <cmath>

#include "shoal/core/error.h"

namespace shoal::layers {

namespace {

Index per_head(Index given, Index hidden, Index heads) {
  return given > 0 ? given : hidden / heads;
}

}  // namespace

template <class T>
AttentionLayer<T>::AttentionLayer(Config c)
    : cfg(c),
      query_projection(
          {.in = c.hidden_size, .out = per_head(c.d_keys, c.hidden_size, c.n_heads) * c.n_heads}),
      key_projection(
          {.in = c.hidden_size, .out = per_head(c.d_keys, c.hidden_size, c.n_heads) * c.n_heads}),
      value_projection(
          {.in = c.hidden_size, .out = per_head(c.d_values, c.hidden_size, c.n_heads) * c.n_heads}),
      out_projection(
          {.in = per_head(c.d_values, c.hidden_size, c.n_heads) * c.n_heads, .out = c.hidden_size}),
      dropout({.p = c.attention_dropout, .stream = c.stream}),
      dk_(per_head(c.d_keys, c.hidden_size, c.n_heads)),
      dv_(per_head(c.d_values, c.hidden_size, c.n_heads)) {}

template <class T>
kernels::AttentionShape AttentionLayer<T>::shape(Index windows) const {
  return {.batch = windows,
          .heads = cfg.n_heads,
          .lq = cfg.lq,
          .lk = cfg.lk,
          .d = dk_,
          .dv = dv_,
          .causal = cfg.causal,
          .scale = cfg.scale > 0 ? cfg.scale : 1.0 / std::sqrt(double(dk_))};
}

template <class T>
void AttentionLayer<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.hidden_size > 0 && cfg.n_heads > 0 && dk_ > 0 && dv_ > 0,
              "attention needs hidden_size ≥ n_heads > 0, got hidden_size={} n_heads={}",
              cfg.hidden_size, cfg.n_heads);
  SHOAL_CHECK(cfg.lq > 0 && cfg.lk > 0 && max_rows % cfg.lq == 0,
              "attention plans whole windows of {} queries, got {} rows", cfg.lq, max_rows);
  const Index windows = max_rows / cfg.lq, kv_rows = windows * cfg.lk, h = cfg.n_heads;
  const Index pairs = windows * h * cfg.lq;
  plan_layer(planner, "query_projection.", query_projection, max_rows);
  plan_layer(planner, "key_projection.", key_projection, kv_rows);
  plan_layer(planner, "value_projection.", value_projection, kv_rows);
  plan_layer(planner, "out_projection.", out_projection, max_rows);
  dropout.plan(planner, pairs);
  planner.buffer(q, Region::kActivations, "q", {max_rows, h * dk_});
  planner.buffer(k, Region::kActivations, "k", {kv_rows, h * dk_});
  planner.buffer(v, Region::kActivations, "v", {kv_rows, h * dv_});
  planner.buffer(heads_out, Region::kActivations, "heads_out", {max_rows, h * dv_});
  planner.buffer(probs, Region::kActivations, "probs", {pairs, cfg.lk});
  if (cfg.attention_dropout > 0)
    planner.buffer(mask, Region::kActivations, "mask", {pairs, cfg.lk});
  planner.buffer(dq, Region::kScratch, "dq", {max_rows, h * dk_});
  planner.buffer(dk, Region::kScratch, "dk", {kv_rows, h * dk_});
  planner.buffer(dv, Region::kScratch, "dv", {kv_rows, h * dv_});
  planner.buffer(dheads, Region::kScratch, "dheads", {max_rows, h * dv_});
  planner.buffer(dxk, Region::kScratch, "dxk", {kv_rows, cfg.hidden_size});
  planner.buffer(dxv, Region::kScratch, "dxv", {kv_rows, cfg.hidden_size});
  planner.buffer(scratch, Region::kScratch, "attention",
                 {Index(kernels::attention_scratch(shape(1)))});
}

template <class T>
void AttentionLayer<T>::init(RngStream& rng) {
  query_projection.init(rng);
  key_projection.init(rng);
  value_projection.init(rng);
  out_projection.init(rng);
}

namespace {

// The [B, L, H, E] operand over a [B·L, H·E] matrix.
template <class T>
kernels::AttentionOperand<T> heads_of(MatView<T> m, Index tokens, Index width) {
  return {m.data, m.ld, tokens * m.ld, width};
}

}  // namespace

template <class T>
void AttentionLayer<T>::forward(const Ctx& ctx, ConstMat<T> xq, ConstMat<T> xkv, MatView<T> y,
                                Index row0) {
  SHOAL_DCHECK(xq.rows % cfg.lq == 0 && xkv.rows == xq.rows / cfg.lq * cfg.lk);
  const Index windows = xq.rows / cfg.lq, kv_rows = xkv.rows;
  const MatView<T> qm = q.mat().rows_block(0, xq.rows), km = k.mat().rows_block(0, kv_rows),
                   vm = v.mat().rows_block(0, kv_rows), om = heads_out.mat().rows_block(0, xq.rows);
  query_projection.forward(ctx, xq, qm);
  key_projection.forward(ctx, xkv, km);
  value_projection.forward(ctx, xkv, vm);
  const kernels::AttentionShape s = shape(windows);
  const Index pairs = windows * cfg.n_heads * cfg.lq;
  const T* drop = nullptr;
  if (cfg.attention_dropout > 0 && ctx.training) {
    const MatView<T> mm = mask.mat().rows_block(0, pairs);
    for (Index r = 0; r < pairs; ++r)
      for (Index c = 0; c < cfg.lk; ++c) mm(r, c) = T(1);
    dropout.forward(ctx, mm, mm, row0 * cfg.n_heads);  // (row0 / lq) windows of H·lq rows
    drop = mm.data;
  }
  kernels::attention_forward<T>(s, heads_of<const T>(qm, cfg.lq, dk_),
                                heads_of<const T>(km, cfg.lk, dk_),
                                heads_of<const T>(vm, cfg.lk, dv_), heads_of<T>(om, cfg.lq, dv_),
                                probs.view.data, drop, scratch.view.data);
  out_projection.forward(ctx, om, y);
}

template <class T>
void AttentionLayer<T>::backward(const Ctx& ctx, ConstMat<T> xq, ConstMat<T> xkv, ConstMat<T> dy,
                                 MatView<T> dxq, MatView<T> dxkv) {
  const Index windows = xq.rows / cfg.lq, kv_rows = xkv.rows;
  const MatView<T> qm = q.mat().rows_block(0, xq.rows), km = k.mat().rows_block(0, kv_rows),
                   vm = v.mat().rows_block(0, kv_rows), om = heads_out.mat().rows_block(0, xq.rows);
  const MatView<T> dqm = dq.mat().rows_block(0, xq.rows), dkm = dk.mat().rows_block(0, kv_rows),
                   dvm = dv.mat().rows_block(0, kv_rows), dom = dheads.mat().rows_block(0, xq.rows);
  out_projection.backward(ctx, om, ConstMat<T>(), dy, dom);
  const T* drop =
      cfg.attention_dropout > 0 && ctx.training ? mask.view.data : static_cast<const T*>(nullptr);
  kernels::attention_backward<T>(
      shape(windows), heads_of<const T>(qm, cfg.lq, dk_), heads_of<const T>(km, cfg.lk, dk_),
      heads_of<const T>(vm, cfg.lk, dv_), probs.view.data, drop,
      heads_of<const T>(dom, cfg.lq, dv_), heads_of<T>(dqm, cfg.lq, dk_),
      heads_of<T>(dkm, cfg.lk, dk_), heads_of<T>(dvm, cfg.lk, dv_), scratch.view.data);
  const MatView<T> gk = dxk.mat().rows_block(0, kv_rows), gv = dxv.mat().rows_block(0, kv_rows);
  key_projection.backward(ctx, xkv, ConstMat<T>(), dkm, gk);
  value_projection.backward(ctx, xkv, ConstMat<T>(), dvm, gv);
  const bool self = dxkv.data == dxq.data;
  query_projection.backward(ctx, xq, ConstMat<T>(), dqm, dxq);
  for (Index r = 0; r < kv_rows; ++r)
    for (Index c = 0; c < cfg.hidden_size; ++c)
      dxkv(r, c) = (self ? dxkv(r, c) : T(0)) + gk(r, c) + gv(r, c);
}

template <class T>
profile::Cost AttentionLayer<T>::forward_cost(double rows) const {
  const double windows = rows / double(cfg.lq), kv = windows * double(cfg.lk);
  profile::Cost c = query_projection.forward_cost(rows) + key_projection.forward_cost(kv) +
                    value_projection.forward_cost(kv) + out_projection.forward_cost(rows);
  c.flops += kernels::attention_flops(shape(1), false) * windows;
  return c;
}

template <class T>
profile::Cost AttentionLayer<T>::backward_cost(double rows) const {
  const double windows = rows / double(cfg.lq), kv = windows * double(cfg.lk);
  profile::Cost c = query_projection.backward_cost(rows) + key_projection.backward_cost(kv) +
                    value_projection.backward_cost(kv) + out_projection.backward_cost(rows);
  c.flops += kernels::attention_flops(shape(1), true) * windows;
  return c;
}

template struct AttentionLayer<float>;
template struct AttentionLayer<double>;

}  // namespace shoal::layers
