#include "shoal/layers/inverted_embedding.h"

#include "shoal/core/error.h"

namespace shoal::layers {

template <class T>
InvertedEmbedding<T>::InvertedEmbedding(Config c)
    : cfg(c),
      linear({.in = c.steps, .out = c.hidden_size}),
      dropout({.p = c.dropout, .stream = c.stream}) {}

template <class T>
void InvertedEmbedding<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.steps > 0 && cfg.channels > 0 && cfg.n_series > 0 && cfg.hidden_size > 0,
              "an inverted embedding needs steps, channels, n_series, hidden_size > 0");
  const Index per_window = cfg.channels * cfg.steps;
  SHOAL_CHECK(max_rows > 0 && max_rows % per_window == 0,
              "an inverted embedding plans whole windows of {} rows, got {}", per_window, max_rows);
  const Index rows = max_rows / per_window * tokens();
  linear.plan(planner, rows);  // its weight and bias directly under the layer's prefix
  dropout.plan(planner, rows);
  planner.buffer(z, Region::kActivations, "packed", {rows, cfg.steps});
  planner.buffer(dz, Region::kScratch, "dpacked", {rows, cfg.steps});
  planner.buffer(dy, Region::kScratch, "dropout_grad", {rows, cfg.hidden_size});
}

template <class T>
void InvertedEmbedding<T>::init(RngStream& rng) {
  linear.init(rng);
}

namespace {

// z[(b·N + n)·C + c, s] = x[(b·C + c)·S + s, n], or the reverse (scatter).
template <class T>
void pack(ConstMat<T> x, MatView<T> z, Index windows, Index c_count, Index steps, Index n_count) {
  for (Index b = 0; b < windows; ++b)
    for (Index c = 0; c < c_count; ++c)
      for (Index s = 0; s < steps; ++s) {
        const T* xr = x.row((b * c_count + c) * steps + s);
        for (Index n = 0; n < n_count; ++n) z((b * n_count + n) * c_count + c, s) = xr[n];
      }
}

template <class T>
void unpack(ConstMat<T> z, MatView<T> x, Index windows, Index c_count, Index steps, Index n_count) {
  for (Index b = 0; b < windows; ++b)
    for (Index c = 0; c < c_count; ++c)
      for (Index s = 0; s < steps; ++s) {
        T* xr = x.row((b * c_count + c) * steps + s);
        for (Index n = 0; n < n_count; ++n) xr[n] = z((b * n_count + n) * c_count + c, s);
      }
}

}  // namespace

template <class T>
void InvertedEmbedding<T>::forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index window0) {
  const Index windows = x.rows / (cfg.channels * cfg.steps), rows = windows * tokens();
  SHOAL_DCHECK(x.cols == cfg.n_series && y.rows == rows && y.cols == cfg.hidden_size);
  const MatView<T> zm = z.mat().rows_block(0, rows);
  pack<T>(x, zm, windows, cfg.channels, cfg.steps, cfg.n_series);
  linear.forward(ctx, zm, y);
  dropout.forward(ctx, y, y, window0 * tokens());
}

template <class T>
void InvertedEmbedding<T>::backward(const Ctx& ctx, ConstMat<T> dyv, MatView<T> dx, Index window0) {
  const Index rows = dyv.rows, windows = rows / tokens();
  const MatView<T> dym = dy.mat().rows_block(0, rows), zm = z.mat().rows_block(0, rows);
  dropout.backward(ctx, ConstMat<T>(), ConstMat<T>(), dyv, dym, window0 * tokens());
  const bool want_dx = dx.data != nullptr;
  const MatView<T> dzm = want_dx ? dz.mat().rows_block(0, rows) : MatView<T>{};
  linear.backward(ctx, zm, ConstMat<T>(), dym, dzm);
  if (want_dx) unpack<T>(dzm, dx, windows, cfg.channels, cfg.steps, cfg.n_series);
}

template <class T>
profile::Cost InvertedEmbedding<T>::forward_cost(double rows) const {
  const double tok = rows / double(cfg.channels * cfg.steps) * double(tokens());
  return linear.forward_cost(tok) + dropout.cost(tok, double(cfg.hidden_size)) +
         profile::elementwise(rows, double(cfg.n_series), 0, 1, sizeof(T));
}

template <class T>
profile::Cost InvertedEmbedding<T>::backward_cost(double rows, bool dx) const {
  const double tok = rows / double(cfg.channels * cfg.steps) * double(tokens());
  profile::Cost c = linear.backward_cost(tok, dx) + dropout.cost(tok, double(cfg.hidden_size));
  if (dx) c += profile::elementwise(rows, double(cfg.n_series), 0, 1, sizeof(T));
  return c;
}

template struct InvertedEmbedding<float>;
template struct InvertedEmbedding<double>;

}  // namespace shoal::layers
