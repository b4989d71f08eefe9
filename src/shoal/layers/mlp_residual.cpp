#include "shoal/layers/mlp_residual.h"

#include <algorithm>

#include "shoal/layers/view_ops.h"

namespace shoal::layers {
template <class T>
MLPResidual<T>::MLPResidual(Config c)
    : cfg(c),
      norm({.normalized_shape = {c.output_dim}}),
      drop({.p = c.dropout, .stream = c.stream}),
      lin1({.in = c.input_dim, .out = c.hidden_size, .act = Act::kRelu}),
      lin2({.in = c.hidden_size, .out = c.output_dim}),
      skip({.in = c.input_dim, .out = c.output_dim}) {}

template <class T>
void MLPResidual<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.input_dim > 0 && cfg.hidden_size > 0 && cfg.output_dim > 0,
              "MLPResidual needs input_dim, hidden_size, output_dim > 0, got {}, {}, {}",
              cfg.input_dim, cfg.hidden_size, cfg.output_dim);
  const Index rows = max_rows;
  each_child(
      [&](std::string_view prefix, auto& layer) { plan_layer(planner, prefix, layer, rows); });
  drop.plan(planner, rows);
  planner.buffer(a1, Region::kActivations, "a1", {rows, cfg.hidden_size});
  planner.buffer(a2, Region::kActivations, "a2", {rows, cfg.output_dim});
  if (cfg.layernorm) planner.buffer(s, Region::kActivations, "s", {rows, cfg.output_dim});
  planner.buffer(da1, Region::kActivationGrads, "da1", {rows, cfg.hidden_size});
  if (cfg.layernorm) planner.buffer(ds, Region::kActivationGrads, "ds", {rows, cfg.output_dim});
  if (cfg.dropout > 0) planner.buffer(da2, Region::kActivationGrads, "da2", {rows, cfg.output_dim});
  planner.buffer(dskip, Region::kScratch, "dskip", {rows, cfg.input_dim});
}

template <class T>
void MLPResidual<T>::init(RngStream& rng) {
  each_child([&](std::string_view, auto& layer) { layer.init(rng); });
}

template <class T>
void MLPResidual<T>::forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index row0) {
  const Index rows = x.rows;
  SHOAL_DCHECK(x.cols == cfg.input_dim && y.cols == cfg.output_dim && y.rows == rows);
  MatView<T> a1r = a1.mat().rows_block(0, rows), a2r = a2.mat().rows_block(0, rows);
  lin1.forward(ctx, x, a1r);
  lin2.forward(ctx, a1r, a2r);
  drop.forward(ctx, a2r, a2r, row0);
  if (cfg.layernorm) {
    // s = skip(x) first, then the norm adds a2 to it while it sums.
    MatView<T> sr = s.mat().rows_block(0, rows);
    skip.forward(ctx, x, sr);
    norm.forward_residual(ctx, a2r, sr, sr, y);
  } else {
    skip.forward(ctx, x, y);
    add_into<T>(a2r, y);
  }
}

template <class T>
void MLPResidual<T>::backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx,
                              Index row0) {
  const Index rows = x.rows;
  MatView<T> a1r = a1.mat().rows_block(0, rows), a2r = a2.mat().rows_block(0, rows),
             da1r = da1.mat().rows_block(0, rows);
  ConstMat<T> ds_r = dy;  // dL/ds
  if (cfg.layernorm) {
    MatView<T> d = ds.mat().rows_block(0, rows);
    norm.backward(ctx, s.mat().rows_block(0, rows), ConstMat<T>{}, dy, d);
    ds_r = d;
  }
  // Without dropout (or in eval) its backward is the identity: skip the copy.
  ConstMat<T> da2r = ds_r;
  if (ctx.training && cfg.dropout > 0) {
    MatView<T> d2 = da2.mat().rows_block(0, rows);
    drop.backward(ctx, a2r, a2r, ds_r, d2, row0);
    da2r = d2;
  }
  lin2.backward(ctx, a1r, a2r, da2r, da1r);
  lin1.backward(ctx, x, a1r, da1r, dx);
  MatView<T> dsk = dx.data != nullptr ? dskip.mat().rows_block(0, rows) : MatView<T>{};
  skip.backward(ctx, x, ConstMat<T>{}, ds_r, dsk);
  if (dx.data != nullptr) add_into<T>(dsk, dx);
}

template <class T>
profile::Cost MLPResidual<T>::forward_cost(double rows) const {
  const double O = double(cfg.output_dim);
  profile::Cost c = lin1.forward_cost(rows) + lin2.forward_cost(rows) + skip.forward_cost(rows) +
                    drop.cost(rows, O);
  if (cfg.layernorm)
    c += norm.forward_cost(rows);
  else
    c += profile::elementwise(rows, O, 1, 2, sizeof(T));
  return c;
}

template <class T>
profile::Cost MLPResidual<T>::backward_cost(double rows, bool dx) const {
  const double O = double(cfg.output_dim), I = double(cfg.input_dim);
  profile::Cost c = lin2.backward_cost(rows) + lin1.backward_cost(rows, dx) +
                    skip.backward_cost(rows, dx) + drop.cost(rows, O);
  if (cfg.layernorm) c += norm.backward_cost(rows);
  if (dx) c += profile::elementwise(rows, I, 1, 2, sizeof(T));
  return c;
}

template <class T>
void TemporalDecoder<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.h > 0 && cfg.decoder_output_dim > 0 && cfg.futr_dim >= 0 && cfg.outputs > 0,
              "TemporalDecoder needs h, decoder_output_dim, outputs > 0, got {}, {}, {}", cfg.h,
              cfg.decoder_output_dim, cfg.outputs);
  const Index rows = max_rows * cfg.h, w = cfg.decoder_output_dim + cfg.futr_dim;
  block.plan(planner, rows);
  planner.buffer(x, Region::kActivations, "x", {rows, w});
  planner.buffer(y, Region::kActivations, "y", {rows, cfg.outputs});
  planner.buffer(dx, Region::kActivationGrads, "dx", {rows, w});
}

template <class T>
void TemporalDecoder<T>::forward(const Ctx& ctx, ConstMat<T> dec, ConstMat<T> futr, MatView<T> out,
                                 Index row0) {
  const Index B = dec.rows, H = cfg.h, D = cfg.decoder_output_dim, F = cfg.futr_dim,
              Q = cfg.outputs;
  SHOAL_DCHECK(dec.cols == H * D && out.cols == H * Q && out.rows == B &&
               (F == 0 || (futr.rows == B && futr.cols == H * F)));
  MatView<T> xr = x.mat().rows_block(0, B * H), yr = y.mat().rows_block(0, B * H);
  for (Index b = 0; b < B; ++b)
    for (Index t = 0; t < H; ++t) {
      T* row = xr.row(b * H + t);
      std::copy(dec.row(b) + t * D, dec.row(b) + (t + 1) * D, row);
      if (F > 0) std::copy(futr.row(b) + t * F, futr.row(b) + (t + 1) * F, row + D);
    }
  block.forward(ctx, xr, yr, row0 * H);
  for (Index b = 0; b < B; ++b)
    for (Index t = 0; t < H; ++t)
      std::copy(yr.row(b * H + t), yr.row(b * H + t) + Q, out.row(b) + t * Q);
}

template <class T>
void TemporalDecoder<T>::backward(const Ctx& ctx, ConstMat<T> dout, MatView<T> ddec,
                                  MatView<T> dfutr, Index row0) {
  const Index B = dout.rows, H = cfg.h, D = cfg.decoder_output_dim, F = cfg.futr_dim,
              Q = cfg.outputs;
  SHOAL_DCHECK(dout.cols == H * Q);
  // y's buffer is free after the forward: it takes dout's rows per step.
  MatView<T> dyr = y.mat().rows_block(0, B * H);
  for (Index b = 0; b < B; ++b)
    for (Index t = 0; t < H; ++t)
      std::copy(dout.row(b) + t * Q, dout.row(b) + (t + 1) * Q, dyr.row(b * H + t));
  const bool want = ddec.data != nullptr || (F > 0 && dfutr.data != nullptr);
  MatView<T> dxr = want ? dx.mat().rows_block(0, B * H) : MatView<T>{};
  block.backward(ctx, x.mat().rows_block(0, B * H), dyr, dxr, row0 * H);
  if (!want) return;
  for (Index b = 0; b < B; ++b)
    for (Index t = 0; t < H; ++t) {
      const T* row = dxr.row(b * H + t);
      if (ddec.data != nullptr) std::copy(row, row + D, ddec.row(b) + t * D);
      if (F > 0 && dfutr.data != nullptr) std::copy(row + D, row + D + F, dfutr.row(b) + t * F);
    }
}

template <class T>
void TemporalDecoder<T>::forward_bias(MatView<T> out) const {
  SHOAL_DCHECK(output_is_bias() && out.cols == cfg.h);
  const T beta = block.norm.has_bias() ? block.norm.p.bias.value.data[0] : T(0);
  for (Index b = 0; b < out.rows; ++b) std::fill(out.row(b), out.row(b) + cfg.h, beta);
}

template <class T>
void TemporalDecoder<T>::backward_bias(ConstMat<T> dout) {
  SHOAL_DCHECK(output_is_bias() && dout.cols == cfg.h);
  if (!block.norm.has_bias()) return;
  double sum = 0;
  for (Index b = 0; b < dout.rows; ++b)
    for (Index t = 0; t < cfg.h; ++t) sum += double(dout(b, t));
  block.norm.p.bias.grad.data[0] += static_cast<T>(sum);
}

template struct MLPResidual<float>;
template struct MLPResidual<double>;
template struct TemporalDecoder<float>;
template struct TemporalDecoder<double>;

}  // namespace shoal::layers
