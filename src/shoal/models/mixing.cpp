#include "shoal/models/mixing.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "shoal/kernels/elementwise.h"
#include "shoal/kernels/gemm.h"
#include "shoal/kernels/reduce.h"
#include "shoal/kernels/time_linear.h"
#include "shoal/layers/init.h"

namespace shoal::models {
namespace {

using kernels::Act;
using kernels::Trans;

}  // namespace

// ---- FeatureMixingX --------------------------------------------------------------------------

namespace {

// y = act(x·Wᵀ + b) for a Linear with no activation or ReLU, as one NN GEMM against Wᵀ [I, O]
// (packed into wt when `repack`), then bias and ReLU on the output.
template <class T>
void linear_forward_packed(const layers::Linear<T>& lin, T* wt, bool repack, ConstMat<T> x,
                           MatView<T> y) {
  const Index in = lin.cfg.in, out = lin.cfg.out;
  SHOAL_DCHECK(x.cols == in && y.cols == out && x.rows == y.rows && lin.cfg.act != Act::kGelu);
  if (repack) {
    const T* w = lin.p.weight.value.data;
    for (Index o = 0; o < out; ++o)
      for (Index i = 0; i < in; ++i) wt[i * out + o] = w[o * in + i];
  }
  kernels::gemm<T>(Trans::kNo, Trans::kNo, x.rows, out, in, T(1), x.data, x.ld, wt, out, T(0),
                   y.data, y.ld);
  kernels::bias_act_rows<T>(y, lin.cfg.bias ? lin.p.bias.value.data : nullptr,
                            lin.cfg.act == Act::kRelu);
}

// The gradient of dropout's input, given its output y (in place, = its input where kept) and
// dy: into buf's first rows, or dy itself without dropout (or in eval), where its backward is the
// identity and the copy is skipped.
template <class T>
ConstMat<T> dropout_backward(const Ctx& ctx, layers::Dropout<T>& drop,
                             std::type_identity_t<ConstMat<T>> y,
                             std::type_identity_t<ConstMat<T>> dy, const Buffer<T>& buf,
                             Index row0) {
  if (!ctx.training || !(drop.cfg.p > 0)) return dy;
  MatView<T> d = buf.mat().rows_block(0, dy.rows);
  drop.backward(ctx, y, y, dy, d, row0);
  return d;
}

}  // namespace

template <class T>
FeatureMixingX<T>::FeatureMixingX(Config c)
    : cfg(c),
      lin1({.in = c.in, .out = c.ff, .act = Act::kRelu}),
      lin2({.in = c.ff, .out = c.out}),
      proj({.in = c.in, .out = c.out}),
      drop1({.p = c.dropout, .stream = c.stream}),
      drop2({.p = c.dropout, .stream = c.stream + 1}),
      norm({.normalized_shape = {c.h, c.out}, .cols = c.out}) {}

template <class T>
void FeatureMixingX<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.h > 0 && max_rows > 0 && max_rows % cfg.h == 0,
              "FeatureMixingX max_rows must be a positive multiple of h = {}, got {}", cfg.h,
              max_rows);
  const Index rows = max_rows;
  this->for_each_layer(
      [&](std::string_view prefix, auto& layer) { plan_layer(planner, prefix, layer, rows); });
  drop1.plan(planner, rows);
  drop2.plan(planner, rows);
  planner.buffer(a1, Region::kActivations, "a1", {rows, cfg.ff});
  planner.buffer(a2, Region::kActivations, "a2", {rows, cfg.out});
  planner.buffer(s, Region::kActivations, "s", {rows, cfg.out});
  planner.buffer(ds, Region::kActivationGrads, "ds", {rows, cfg.out});
  if (cfg.dropout > 0) planner.buffer(da2, Region::kActivationGrads, "da2", {rows, cfg.out});
  planner.buffer(da1, Region::kActivationGrads, "da1", {rows, cfg.ff});
  if (projects()) planner.buffer(dproj, Region::kScratch, "dproj", {rows, cfg.in});
  planner.buffer(wt1, Region::kScratch, "wt1", {cfg.in, cfg.ff});
  planner.buffer(wt2, Region::kScratch, "wt2", {cfg.ff, cfg.out});
  if (projects()) planner.buffer(wtp, Region::kScratch, "wtp", {cfg.in, cfg.out});
}

template <class T>
void FeatureMixingX<T>::forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index row0) {
  const Index rows = x.rows;
  MatView<T> a1r = a1.mat().rows_block(0, rows), a2r = a2.mat().rows_block(0, rows),
             sr = s.mat().rows_block(0, rows);
  // The first chunk of a batch packs the transposed weights; later chunks reuse them.
  const bool repack = row0 == 0;
  linear_forward_packed<T>(lin1, wt1.view.data, repack, x, a1r);
  // In place: ReLU backward only needs the sign of a kept value.
  drop1.forward(ctx, a1r, a1r, row0);
  linear_forward_packed<T>(lin2, wt2.view.data, repack, a1r, a2r);
  drop2.forward(ctx, a2r, a2r, row0);
  if (projects()) {
    // s = proj(x) first, then the norm adds a2 to it while it sums.
    linear_forward_packed<T>(proj, wtp.view.data, repack, x, sr);
    norm.forward_residual(ctx, a2r, sr, sr, y);
  } else {
    norm.forward_residual(ctx, a2r, x, sr, y);
  }
}

template <class T>
void FeatureMixingX<T>::backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx,
                                 Index row0) {
  const Index rows = x.rows;
  MatView<T> a1r = a1.mat().rows_block(0, rows), a2r = a2.mat().rows_block(0, rows),
             sr = s.mat().rows_block(0, rows), dsr = ds.mat().rows_block(0, rows),
             da1r = da1.mat().rows_block(0, rows);
  norm.backward(ctx, sr, ConstMat<T>{}, dy, dsr);
  const ConstMat<T> da2r = dropout_backward(ctx, drop2, a2r, dsr, da2, row0);
  lin2.backward(ctx, a1r, a2r, da2r, da1r);
  drop1.backward(ctx, a1r, a1r, da1r, da1r, row0);
  lin1.backward(ctx, x, a1r, da1r, dx);
  if (projects()) {
    MatView<T> dp = dx.data != nullptr ? dproj.mat().rows_block(0, rows) : MatView<T>{};
    proj.backward(ctx, x, sr, dsr, dp);
    if (dx.data != nullptr) add_into<T>(dp, dx);
  } else if (dx.data != nullptr) {
    add_into<T>(dsr, dx);
  }
}

// lin1 + ReLU, dropout, lin2, dropout, the residual (projected when in ≠ out) added in the
// norm's first pass, LayerNorm over (H, out); the backward's residual share is not counted.
template <class T>
profile::Cost FeatureMixingX<T>::forward_cost(double rows) const {
  profile::Cost c = lin1.forward_cost(rows) + lin2.forward_cost(rows) +
                    profile::elementwise(rows, double(cfg.out), 1, 2, sizeof(T)) +
                    norm.forward_cost(rows) + drop1.cost(rows, double(cfg.ff)) +
                    drop2.cost(rows, double(cfg.out));
  if (projects()) c += proj.forward_cost(rows);
  return c;
}

template <class T>
profile::Cost FeatureMixingX<T>::backward_cost(double rows, bool dx) const {
  profile::Cost c = norm.backward_cost(rows) + lin2.backward_cost(rows) +
                    lin1.backward_cost(rows, dx) + drop1.cost(rows, double(cfg.ff)) +
                    drop2.cost(rows, double(cfg.out));
  if (projects()) c += proj.backward_cost(rows, dx);
  return c;
}

// ---- TemporalMixingX -------------------------------------------------------------------------

template <class T>
TemporalMixingX<T>::TemporalMixingX(Config c)
    : cfg(c),
      norm({.normalized_shape = {c.h, c.cols}, .cols = c.cols}),
      lin({.in = c.h, .out = c.h, .cols = c.cols, .act = Act::kRelu}),
      drop({.p = c.dropout, .stream = c.stream}) {}

template <class T>
void TemporalMixingX<T>::plan(Planner& planner, Index max_rows) {
  const Index rows = max_rows;
  this->for_each_layer(
      [&](std::string_view prefix, auto& layer) { plan_layer(planner, prefix, layer, rows); });
  drop.plan(planner, rows);
  planner.buffer(a, Region::kActivations, "a", {rows, cfg.cols});
  planner.buffer(s, Region::kActivations, "s", {rows, cfg.cols});
  if (cfg.dropout > 0) planner.buffer(da, Region::kActivationGrads, "da", {rows, cfg.cols});
}

template <class T>
void TemporalMixingX<T>::forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index row0) {
  const Index rows = x.rows;
  MatView<T> ar = a.mat().rows_block(0, rows), sr = s.mat().rows_block(0, rows);
  lin.forward(ctx, x, ar);
  drop.forward(ctx, ar, ar, row0);
  norm.forward_residual(ctx, ar, x, sr, y);
}

template <class T>
void TemporalMixingX<T>::backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx,
                                  Index row0) {
  const Index rows = x.rows;
  MatView<T> ar = a.mat().rows_block(0, rows), sr = s.mat().rows_block(0, rows);
  // The norm's input gradient is the residual's share of dx; the time Linear then adds its own.
  norm.backward(ctx, sr, ConstMat<T>{}, dy, dx);
  const ConstMat<T> dar = dropout_backward(ctx, drop, ar, dx, da, row0);
  lin.backward(ctx, x, ar, dar, dx, /*accumulate_dx=*/true);
}

// The time Linear H → H + ReLU on the windows' columns, dropout, the residual added in the
// norm's first pass, LayerNorm over (H, C); the backward adds the Linear's dx to the norm's.
template <class T>
profile::Cost TemporalMixingX<T>::forward_cost(double rows) const {
  return lin.forward_cost(rows) + profile::elementwise(rows, double(cfg.cols), 1, 2, sizeof(T)) +
         norm.forward_cost(rows) + drop.cost(rows, double(cfg.cols));
}

template <class T>
profile::Cost TemporalMixingX<T>::backward_cost(double rows, bool dx) const {
  return norm.backward_cost(rows) + lin.backward_cost(rows, dx) +
         profile::elementwise(rows, double(cfg.cols), 1, 2, sizeof(T)) +
         drop.cost(rows, double(cfg.cols));
}

#define SHOAL_INSTANTIATE(T)         \
  template struct FeatureMixingX<T>; \
  template struct TemporalMixingX<T>;
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::models
