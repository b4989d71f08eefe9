#include "shoal/models/mixing.h"

#include <algorithm>
#include <cmath>

#include "shoal/kernels/elementwise.h"
#include "shoal/kernels/gemm.h"
#include "shoal/kernels/reduce.h"
#include "shoal/kernels/time_linear.h"
#include "shoal/layers/init.h"

namespace shoal::models {
namespace {

using kernels::Act;
using kernels::lane_sum;
using kernels::Trans;

}  // namespace

// ---- helpers ---------------------------------------------------------------------------------

template <class T>
void copy_view(ConstMat<T> x, MatView<T> y) {
  SHOAL_DCHECK(x.rows == y.rows && x.cols == y.cols);
  for (Index r = 0; r < x.rows; ++r) std::copy_n(x.row(r), x.cols, y.row(r));
}

template <class T>
void add_into(ConstMat<T> x, MatView<T> y) {
  SHOAL_DCHECK(x.rows == y.rows && x.cols == y.cols);
  for (Index r = 0; r < x.rows; ++r) {
    const T* xr = x.row(r);
    T* yr = y.row(r);
    for (Index c = 0; c < x.cols; ++c) yr[c] += xr[c];
  }
}

template <class T>
void transpose_windows(ConstMat<T> x, MatView<T> y, Index batch, bool accumulate) {
  const Index rows = x.rows / batch, cols = x.cols;
  SHOAL_DCHECK(x.rows == batch * rows && y.rows == batch * cols && y.cols == rows);
  for (Index b = 0; b < batch; ++b)
    for (Index r = 0; r < rows; ++r) {
      const T* xr = x.row(b * rows + r);
      if (accumulate)
        for (Index c = 0; c < cols; ++c) y(b * cols + c, r) += xr[c];
      else
        for (Index c = 0; c < cols; ++c) y(b * cols + c, r) = xr[c];
    }
}

// ---- TimeLinear ------------------------------------------------------------------------------

template <class T>
void TimeLinear<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.in > 0 && cfg.out > 0 && cfg.cols > 0,
              "TimeLinear needs in, out, cols > 0, got {} {} {}", cfg.in, cfg.out, cfg.cols);
  SHOAL_CHECK(cfg.act == Act::kNone || cfg.act == Act::kRelu, "TimeLinear supports none/relu");
  SHOAL_CHECK(max_rows > 0 && max_rows % cfg.in == 0,
              "TimeLinear max_rows must be a positive multiple of in = {}, got {}", cfg.in,
              max_rows);
  const Index max_batch = max_rows / cfg.in;
  planner.param(weight, "weight", {cfg.out, cfg.in});
  planner.param(bias, "bias", {cfg.out});
  planner.buffer(dz, Region::kScratch, "dz", {max_batch * cfg.out, cfg.cols});
  planner.buffer(wt, Region::kScratch, "wt", {cfg.in * cfg.out + cfg.out * cfg.in * 8});
}

template <class T>
void TimeLinear<T>::init(RngStream& rng) {
  layers::fill_uniform(weight.value, layers::kaiming_uniform_bound(cfg.in), rng);
  layers::fill_uniform(bias.value, layers::linear_bias_bound(cfg.in), rng);
}

template <class T>
void TimeLinear<T>::forward(const Ctx&, ConstMat<T> x, MatView<T> y) {
  const Index ni = cfg.in, no = cfg.out, c = cfg.cols, batch = x.rows / ni;
  SHOAL_DCHECK(x.rows == batch * ni && y.rows == batch * no && x.cols == c && y.cols == c);
  const T* w = weight.value.data;
  const T* bs = bias.value.data;
  const bool relu = cfg.act == Act::kRelu;
  for (Index b = 0; b < batch; ++b) {
    T* yb = y.row(b * no);
    kernels::gemm<T>(Trans::kNo, Trans::kNo, no, c, ni, T(1), w, ni, x.row(b * ni), x.ld, T(0), yb,
                     y.ld);
    for (Index o = 0; o < no; ++o) {
      T* yr = yb + o * y.ld;
      const T bo = bs[o];
      if (relu)
        for (Index j = 0; j < c; ++j) yr[j] = std::max(yr[j] + bo, T(0));
      else
        for (Index j = 0; j < c; ++j) yr[j] += bo;
    }
  }
}

template <class T>
void TimeLinear<T>::backward(const Ctx&, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy,
                             MatView<T> dx, bool accumulate_dx) {
  const Index ni = cfg.in, no = cfg.out, c = cfg.cols, batch = x.rows / ni;
  SHOAL_DCHECK(dy.rows == batch * no && dy.cols == c && x.rows == batch * ni);
  T* db = bias.grad.data;
  ConstMat<T> g = dy;
  if (cfg.act == Act::kRelu) {
    MatView<T> z = dz.mat().rows_block(0, batch * no);
    for (Index r = 0; r < batch * no; ++r) kernels::relu_mask<T>(c, y.row(r), dy.row(r), z.row(r));
    g = z;
  }
  // Wᵀ [I, O] once, so every window's dx_b = Wᵀ·g_b is a plain NN product.
  T* w_t = wt.view.data;
  const T* w = weight.value.data;
  for (Index o = 0; o < no; ++o)
    for (Index i = 0; i < ni; ++i) w_t[i * no + o] = w[o * ni + i];
  kernels::time_weight_grad<T>(no, ni, c, batch, g.data, g.ld, x.data, x.ld, weight.grad.data,
                               w_t + ni * no);
  for (Index b = 0; b < batch; ++b) {
    const T* gb = g.row(b * no);
    for (Index o = 0; o < no; ++o) {
      const T* gr = gb + o * g.ld;
      db[o] += static_cast<T>(kernels::sum_lanes<T>(c, gr));
    }
    // dx_b (+)= Wᵀ · g_b   [I, O]·[O, C]
    if (dx.data != nullptr)
      kernels::gemm<T>(Trans::kNo, Trans::kNo, ni, c, no, T(1), w_t, no, gb, g.ld,
                       accumulate_dx ? T(1) : T(0), dx.row(b * ni), dx.ld);
  }
}

template <class T>
profile::Cost TimeLinear<T>::forward_cost(double rows) const {
  const double columns = rows / double(cfg.in) * double(cfg.cols);
  return profile::linear_forward(
      columns, double(cfg.in), double(cfg.out), true,
      cfg.act == Act::kRelu ? profile::ActKind::kRelu : profile::ActKind::kNone, sizeof(T));
}

template <class T>
profile::Cost TimeLinear<T>::backward_cost(double rows, bool dx) const {
  const double columns = rows / double(cfg.in) * double(cfg.cols);
  profile::Cost c =
      profile::linear_backward_dw(columns, double(cfg.in), double(cfg.out), true, sizeof(T));
  if (dx)
    c += profile::linear_backward_dx(
        columns, double(cfg.in), double(cfg.out),
        cfg.act == Act::kRelu ? profile::ActKind::kRelu : profile::ActKind::kNone, sizeof(T));
  return c;
}

// ---- RevIn -----------------------------------------------------------------------------------

template <class T>
void RevIn<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.n_series > 0 && cfg.input_size > 0 && cfg.h > 0,
              "RevIN needs n_series, input_size, h > 0, got {} {} {}", cfg.n_series, cfg.input_size,
              cfg.h);
  SHOAL_CHECK(max_rows > 0 && max_rows % cfg.input_size == 0,
              "RevIN max_rows must be a positive multiple of input_size = {}, got {}",
              cfg.input_size, max_rows);
  const Index max_batch = max_rows / cfg.input_size;
  planner.param(affine_weight, "affine_weight", {1, 1, cfg.n_series});
  planner.param(affine_bias, "affine_bias", {1, 1, cfg.n_series});
  planner.buffer(mu, Region::kActivations, "mu", {max_batch, cfg.n_series});
  planner.buffer(sigma, Region::kActivations, "sigma", {max_batch, cfg.n_series});
}

template <class T>
void RevIn<T>::init(RngStream&) {
  std::fill(affine_weight.value.begin(), affine_weight.value.end(), T(1));
  std::fill(affine_bias.value.begin(), affine_bias.value.end(), T(0));
}

template <class T>
void RevIn<T>::normalize(ConstMat<T> x, MatView<T> y) {
  const Index n = cfg.n_series, len = cfg.input_size, batch = x.rows / len;
  SHOAL_DCHECK(x.cols == n && y.cols == n && y.rows == x.rows && x.rows == batch * len);
  const T* w = affine_weight.value.data;
  const T* bs = affine_bias.value.data;
  const double inv_l = 1.0 / static_cast<double>(len);
  for (Index b = 0; b < batch; ++b) {
    T* mb = mu.view.data + b * n;
    T* sb = sigma.view.data + b * n;
    for (Index s = 0; s < n; ++s) {
      const double m =
          lane_sum(len, [&](Index t) { return static_cast<double>(x(b * len + t, s)); }) * inv_l;
      const double v = lane_sum(len,
                                [&](Index t) {
                                  const double d = static_cast<double>(x(b * len + t, s)) - m;
                                  return d * d;
                                }) *
                       inv_l;
      mb[s] = static_cast<T>(m);
      sb[s] = static_cast<T>(std::sqrt(v + cfg.eps));
    }
    for (Index t = 0; t < len; ++t) {
      const T* xr = x.row(b * len + t);
      T* yr = y.row(b * len + t);
      for (Index s = 0; s < n; ++s) yr[s] = (xr[s] - mb[s]) / sb[s] * w[s] + bs[s];
    }
  }
}

template <class T>
void RevIn<T>::normalize_backward(ConstMat<T> x, ConstMat<T> dy) {
  const Index n = cfg.n_series, len = cfg.input_size, batch = x.rows / len;
  T* dw = affine_weight.grad.data;
  T* db = affine_bias.grad.data;
  for (Index b = 0; b < batch; ++b) {
    const T* mb = mu.view.data + b * n;
    const T* sb = sigma.view.data + b * n;
    for (Index t = 0; t < len; ++t) {
      const T* xr = x.row(b * len + t);
      const T* dyr = dy.row(b * len + t);
      for (Index s = 0; s < n; ++s) {
        dw[s] += dyr[s] * ((xr[s] - mb[s]) / sb[s]);
        db[s] += dyr[s];
      }
    }
  }
}

template <class T>
void RevIn<T>::denormalize(ConstMat<T> x, MatView<T> y) {
  const Index n = cfg.n_series, len = cfg.h, batch = x.rows / len;
  const T* w = affine_weight.value.data;
  const T* bs = affine_bias.value.data;
  for (Index b = 0; b < batch; ++b) {
    const T* mb = mu.view.data + b * n;
    const T* sb = sigma.view.data + b * n;
    for (Index t = 0; t < len; ++t) {
      const T* xr = x.row(b * len + t);
      T* yr = y.row(b * len + t);
      for (Index s = 0; s < n; ++s) yr[s] = (xr[s] - bs[s]) / w[s] * sb[s] + mb[s];
    }
  }
}

template <class T>
void RevIn<T>::denormalize_backward(ConstMat<T> x, ConstMat<T> dy, MatView<T> dx) {
  const Index n = cfg.n_series, len = cfg.h, batch = x.rows / len;
  const T* w = affine_weight.value.data;
  const T* bs = affine_bias.value.data;
  T* dw = affine_weight.grad.data;
  T* db = affine_bias.grad.data;
  for (Index b = 0; b < batch; ++b) {
    const T* sb = sigma.view.data + b * n;
    for (Index t = 0; t < len; ++t) {
      const T* xr = x.row(b * len + t);
      const T* dyr = dy.row(b * len + t);
      T* dxr = dx.row(b * len + t);
      for (Index s = 0; s < n; ++s) {
        // y = (x − b)/w · σ + μ:  ∂y/∂x = σ/w,  ∂y/∂b = −σ/w,  ∂y/∂w = −(x − b)/w² · σ
        const T g = dyr[s] * sb[s] / w[s];
        dxr[s] = g;
        db[s] -= g;
        dw[s] -= g * (xr[s] - bs[s]) / w[s];
      }
    }
  }
}

template <class T>
profile::Cost RevIn<T>::normalize_cost(double rows) const {
  return profile::elementwise(rows, double(cfg.n_series), 8, 1, sizeof(T));
}
template <class T>
profile::Cost RevIn<T>::normalize_backward_cost(double rows) const {
  return profile::elementwise(rows, double(cfg.n_series), 2, 2, sizeof(T));
}
template <class T>
profile::Cost RevIn<T>::denormalize_cost(double rows) const {
  return profile::elementwise(rows, double(cfg.n_series), 4, 1, sizeof(T));
}
template <class T>
profile::Cost RevIn<T>::denormalize_backward_cost(double rows) const {
  return profile::elementwise(rows, double(cfg.n_series), 4, 2, sizeof(T));
}

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
  each_child([&](std::string_view prefix, auto& layer) {
    planner.push_scope(prefix);
    layer.plan(planner, rows);
    planner.pop_scope();
  });
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
void FeatureMixingX<T>::init(RngStream& rng) {
  each_child([&](std::string_view, auto& layer) { layer.init(rng); });
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
  // Without dropout (or in eval) its backward is the identity: skip the copy.
  ConstMat<T> da2r = dsr;
  if (ctx.training && cfg.dropout > 0) {
    MatView<T> d2 = da2.mat().rows_block(0, rows);
    drop2.backward(ctx, a2r, a2r, dsr, d2, row0);
    da2r = d2;
  }
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
  planner.push_scope("temporal_norm.");
  norm.plan(planner, rows);
  planner.pop_scope();
  planner.push_scope("temporal_lin.");
  lin.plan(planner, rows);
  planner.pop_scope();
  drop.plan(planner, rows);
  planner.buffer(a, Region::kActivations, "a", {rows, cfg.cols});
  planner.buffer(s, Region::kActivations, "s", {rows, cfg.cols});
  if (cfg.dropout > 0) planner.buffer(da, Region::kActivationGrads, "da", {rows, cfg.cols});
}

template <class T>
void TemporalMixingX<T>::init(RngStream& rng) {
  norm.init(rng);
  lin.init(rng);
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
  ConstMat<T> dar = dx;
  if (ctx.training && cfg.dropout > 0) {
    MatView<T> d = da.mat().rows_block(0, rows);
    drop.backward(ctx, ar, ar, dx, d, row0);
    dar = d;
  }
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

#define SHOAL_INSTANTIATE(T)                           \
  template struct TimeLinear<T>;                       \
  template struct RevIn<T>;                            \
  template struct FeatureMixingX<T>;                   \
  template struct TemporalMixingX<T>;                  \
  template void copy_view<T>(ConstMat<T>, MatView<T>); \
  template void add_into<T>(ConstMat<T>, MatView<T>);  \
  template void transpose_windows<T>(ConstMat<T>, MatView<T>, Index, bool);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::models
