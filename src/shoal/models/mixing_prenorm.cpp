// TSMixer's pre-norm mixing blocks (models/mixing.h): TemporalMixing and FeatureMixing, with
// BatchNorm1d over each window flattened to one row.
#include "shoal/models/mixing.h"

namespace shoal::models {
namespace {

template <class T>
MatView<T> rows_of(const Buffer<T>& buf, Index r) {
  return buf.mat().rows_block(0, r);
}

// The first `windows` rows of a [B, F] view of buf (one row per window, as BatchNorm1d sees it).
template <class T>
MatView<T> windows_of(const Buffer<T>& buf, Index windows, Index f) {
  return MatView<T>(buf.view.data, windows, f);
}

}  // namespace

// ---- TemporalMixing --------------------------------------------------------------------------

template <class T>
TemporalMixing<T>::TemporalMixing(Config c)
    : cfg(c),
      norm({.num_features = c.n_series * c.input_size, .eps = 1e-3, .momentum = 0.01}),
      lin({.in = c.input_size, .out = c.input_size, .act = kernels::Act::kRelu}),
      drop({.p = c.dropout, .stream = c.stream}) {}

template <class T>
void TemporalMixing<T>::plan(Planner& planner, Index max_rows) {
  const Index n = cfg.n_series, l = cfg.input_size;
  SHOAL_CHECK(n > 0 && l > 0 && max_rows > 0 && max_rows % l == 0,
              "TemporalMixing max_rows must be a positive multiple of input_size = {}, got {}", l,
              max_rows);
  const Index windows = max_rows / l, rn = windows * n;
  plan_layer(planner, "temporal_norm.", norm, windows);
  plan_layer(planner, "temporal_lin.", lin, rn);
  drop.plan(planner, max_rows);
  planner.push_scope("act.");
  for (auto [buf, name] : {std::pair{&tt, "tt"}, {&tu, "tu"}, {&tv, "tv"}})
    planner.buffer(*buf, Region::kActivations, name, {rn, l});
  for (auto [buf, name] : {std::pair{&dtt, "dtt"}, {&dtu, "dtu"}, {&dtv, "dtv"}})
    planner.buffer(*buf, Region::kActivationGrads, name, {rn, l});
  planner.buffer(tw, Region::kActivations, "tw", {max_rows, n});
  planner.buffer(dtw, Region::kActivationGrads, "dtw", {max_rows, n});
  planner.pop_scope();
}

template <class T>
void TemporalMixing<T>::forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y) {
  const Index n = cfg.n_series, l = cfg.input_size, rows = x.rows, bsz = rows / l, rn = bsz * n;
  SHOAL_DCHECK(x.cols == n && y.rows == rows && y.cols == n);
  transpose_windows<T>(x, rows_of(tt, rn), bsz, false);
  norm.forward(ctx, windows_of(tt, bsz, n * l), windows_of(tu, bsz, n * l));
  lin.forward(ctx, rows_of(tu, rn), rows_of(tv, rn));
  MatView<T> w = rows_of(tw, rows);
  transpose_windows<T>(rows_of(tv, rn), w, bsz, false);
  drop.forward(ctx, w, w);
  for (Index r = 0; r < rows; ++r)
    for (Index j = 0; j < n; ++j) y(r, j) = w(r, j) + x(r, j);
}

template <class T>
void TemporalMixing<T>::backward(const Ctx& ctx, ConstMat<T> /*x*/, ConstMat<T> dy, MatView<T> dx) {
  const Index n = cfg.n_series, l = cfg.input_size, rows = dy.rows, bsz = rows / l, rn = bsz * n;
  MatView<T> dw = rows_of(dtw, rows);
  drop.backward(ctx, rows_of(tw, rows), rows_of(tw, rows), dy, dw);
  transpose_windows<T>(dw, rows_of(dtv, rn), bsz, false);
  lin.backward(ctx, rows_of(tu, rn), rows_of(tv, rn), rows_of(dtv, rn), rows_of(dtu, rn));
  norm.backward(ctx, windows_of(tt, bsz, n * l), windows_of(tu, bsz, n * l),
                windows_of(dtu, bsz, n * l), windows_of(dtt, bsz, n * l));
  if (dx.data == nullptr) return;
  copy_view<T>(dy, dx);
  transpose_windows<T>(rows_of(dtt, rn), dx, bsz, true);
}

// BatchNorm over (N·L) per window, the time Linear L → L + ReLU on the windows' N columns,
// dropout, the residual add; transposes are data movement (not counted).
template <class T>
profile::Cost TemporalMixing<T>::forward_cost(double rows) const {
  const double e = sizeof(T), n = double(cfg.n_series), windows = rows / double(cfg.input_size);
  return norm.forward_cost(windows) + lin.forward_cost(windows * n) + drop.cost(rows, n) +
         profile::elementwise(rows, n, 1, 2, e);
}

template <class T>
profile::Cost TemporalMixing<T>::backward_cost(double rows) const {
  const double e = sizeof(T), n = double(cfg.n_series), windows = rows / double(cfg.input_size);
  return profile::elementwise(rows, n, 1, 2, e) + drop.cost(rows, n) +
         lin.backward_cost(windows * n) + norm.backward_cost(windows);
}

// ---- FeatureMixing ---------------------------------------------------------------------------

template <class T>
FeatureMixing<T>::FeatureMixing(Config c)
    : cfg(c),
      norm({.num_features = c.input_size * c.n_series, .eps = 1e-3, .momentum = 0.01}),
      lin1({.in = c.n_series, .out = c.ff, .act = kernels::Act::kRelu}),
      lin2({.in = c.ff, .out = c.n_series}),
      drop1({.p = c.dropout, .stream = c.stream}),
      drop2({.p = c.dropout, .stream = c.stream + 1}) {}

template <class T>
void FeatureMixing<T>::plan(Planner& planner, Index max_rows) {
  const Index n = cfg.n_series, l = cfg.input_size, k = cfg.ff;
  SHOAL_CHECK(n > 0 && l > 0 && k > 0 && max_rows > 0 && max_rows % l == 0,
              "FeatureMixing max_rows must be a positive multiple of input_size = {}, got {}", l,
              max_rows);
  plan_layer(planner, "feature_norm.", norm, max_rows / l);
  plan_layer(planner, "feature_lin_1.", lin1, max_rows);
  plan_layer(planner, "feature_lin_2.", lin2, max_rows);
  drop1.plan(planner, max_rows);
  drop2.plan(planner, max_rows);
  planner.push_scope("act.");
  planner.buffer(fb, Region::kActivations, "fb", {max_rows, n});
  planner.buffer(f1, Region::kActivations, "f1", {max_rows, k});
  planner.buffer(f2, Region::kActivations, "f2", {max_rows, n});
  planner.buffer(dfb, Region::kActivationGrads, "dfb", {max_rows, n});
  planner.buffer(df1, Region::kActivationGrads, "df1", {max_rows, k});
  planner.buffer(df2, Region::kActivationGrads, "df2", {max_rows, n});
  planner.buffer(dbn, Region::kActivationGrads, "dbn", {max_rows, n});
  planner.pop_scope();
}

template <class T>
void FeatureMixing<T>::forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y) {
  const Index n = cfg.n_series, l = cfg.input_size, rows = x.rows, bsz = rows / l;
  SHOAL_DCHECK(x.cols == n && x.ld == n && y.rows == rows && y.cols == n);
  // [B·L, N] = [B, L·N]: a contiguous window is one BatchNorm row.
  norm.forward(ctx, ConstMat<T>(x.data, bsz, l * n), windows_of(fb, bsz, l * n));
  MatView<T> a1 = rows_of(f1, rows), a2 = rows_of(f2, rows);
  lin1.forward(ctx, rows_of(fb, rows), a1);
  drop1.forward(ctx, a1, a1);  // in place: ReLU backward only needs the sign of a kept value
  lin2.forward(ctx, a1, a2);
  drop2.forward(ctx, a2, a2);
  for (Index r = 0; r < rows; ++r)
    for (Index j = 0; j < n; ++j) y(r, j) = a2(r, j) + x(r, j);
}

template <class T>
void FeatureMixing<T>::backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx) {
  const Index n = cfg.n_series, l = cfg.input_size, rows = x.rows, bsz = rows / l;
  SHOAL_DCHECK(dx.rows == rows && dx.cols == n);
  MatView<T> a1 = rows_of(f1, rows), a2 = rows_of(f2, rows), da1 = rows_of(df1, rows),
             da2 = rows_of(df2, rows);
  drop2.backward(ctx, a2, a2, dy, da2);
  lin2.backward(ctx, a1, a2, da2, da1);
  drop1.backward(ctx, a1, a1, da1, da1);
  lin1.backward(ctx, rows_of(fb, rows), a1, da1, rows_of(dfb, rows));
  norm.backward(ctx, ConstMat<T>(x.data, bsz, l * n), windows_of(fb, bsz, l * n),
                windows_of(dfb, bsz, l * n), windows_of(dbn, bsz, l * n));
  MatView<T> dn = rows_of(dbn, rows);
  for (Index r = 0; r < rows; ++r)
    for (Index j = 0; j < n; ++j) dx(r, j) = dy(r, j) + dn(r, j);
}

// BatchNorm over (L·N) per window, Linear N → K + ReLU, dropout, Linear K → N, dropout, the
// residual add, on B·L rows.
template <class T>
profile::Cost FeatureMixing<T>::forward_cost(double rows) const {
  const double e = sizeof(T), n = double(cfg.n_series), k = double(cfg.ff);
  return norm.forward_cost(rows / double(cfg.input_size)) + lin1.forward_cost(rows) +
         drop1.cost(rows, k) + lin2.forward_cost(rows) + drop2.cost(rows, n) +
         profile::elementwise(rows, n, 1, 2, e);
}

template <class T>
profile::Cost FeatureMixing<T>::backward_cost(double rows) const {
  const double n = double(cfg.n_series), k = double(cfg.ff);
  return drop2.cost(rows, n) + lin2.backward_cost(rows) + drop1.cost(rows, k) +
         lin1.backward_cost(rows) + norm.backward_cost(rows / double(cfg.input_size));
}

template struct TemporalMixing<float>;
template struct TemporalMixing<double>;
template struct FeatureMixing<float>;
template struct FeatureMixing<double>;

}  // namespace shoal::models
