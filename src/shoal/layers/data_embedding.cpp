#include "shoal/layers/data_embedding.h"

#include <cmath>

#include "shoal/core/error.h"
#include "shoal/layers/init.h"

namespace shoal::layers {

std::vector<double> sinusoid_positions(Index tokens, Index width) {
  SHOAL_CHECK(width > 0 && width % 2 == 0,
              "the sine/cosine position table needs an even width (neuralforecast's "
              "PositionalEmbedding fills sines and cosines in pairs), got {}",
              width);
  // Built as floats and widened at the end: gcc drops a float rounding of sin and cos between
  // double values (it merges them into one double sincos), which a float table cannot skip.
  std::vector<float> table(size_t(tokens * width));
  // torch: the float factor −ln(10⁴)/E times float 2i, exp in float; the float product t · ω_i.
  const auto factor = static_cast<float>(-(std::log(10000.0) / double(width)));
  for (Index i = 0; i < width / 2; ++i) {
    const auto omega = static_cast<float>(std::exp(double(static_cast<float>(2 * i) * factor)));
    for (Index t = 0; t < tokens; ++t) {
      const double angle = double(static_cast<float>(t) * omega);
      table[size_t(t * width + 2 * i)] = static_cast<float>(std::sin(angle));
      table[size_t(t * width + 2 * i + 1)] = static_cast<float>(std::cos(angle));
    }
  }
  return {table.begin(), table.end()};
}

template <class T>
DataEmbedding<T>::DataEmbedding(Config c) : cfg(c), dropout({.p = c.dropout, .stream = c.stream}) {
  if (cfg.pos_embedding && cfg.tokens > 0 && cfg.hidden_size > 0) {
    const std::vector<double> table = sinusoid_positions(cfg.tokens, cfg.hidden_size);
    pe.assign(table.begin(), table.end());
  }
}

template <class T>
void DataEmbedding<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.c_in > 0 && cfg.tokens > 0 && cfg.hidden_size > 0 && cfg.exog >= 0,
              "a data embedding needs c_in, tokens and hidden_size > 0");
  SHOAL_CHECK(max_rows % cfg.tokens == 0, "a data embedding plans whole windows of {} tokens",
              cfg.tokens);
  planner.param(p.conv, "value_embedding.tokenConv.weight", {cfg.hidden_size, cfg.c_in, 3});
  if (cfg.exog > 0)
    planner.param(p.embed, "temporal_embedding.embed.weight", {cfg.hidden_size, cfg.exog});
  dropout.plan(planner, max_rows);
  planner.buffer(dz, Region::kScratch, "dz", {max_rows, cfg.hidden_size});
}

template <class T>
void DataEmbedding<T>::init(RngStream& rng) {
  const Index fan_in = 3 * cfg.c_in, n = p.conv.value.numel();
  // Conv1d's own init draws first (its words are spent), then kaiming_normal_ replaces it.
  fill_uniform(p.conv.value, kaiming_uniform_bound(fan_in), rng);
  const double std_dev = std::sqrt(2.0) / std::sqrt(double(fan_in));
  if (rng.replays_torch()) {
    std::vector<float> w(static_cast<size_t>(n));
    rng.torch_normal_fill(w.data(), n, 0.0, std_dev);
    for (Index i = 0; i < n; ++i) p.conv.value.data[i] = static_cast<T>(w[size_t(i)]);
  } else {
    for (Index i = 0; i < n; ++i) p.conv.value.data[i] = static_cast<T>(std_dev * rng.normal());
  }
  if (cfg.exog > 0) fill_uniform(p.embed.value, kaiming_uniform_bound(cfg.exog), rng);
}

template <class T>
void DataEmbedding<T>::forward(const Ctx& ctx, ConstMat<T> x, Mark mark, MatView<T> y, Index row0) {
  const Index tl = cfg.tokens, c_in = cfg.c_in, e = cfg.hidden_size, f = cfg.exog,
              windows = x.rows / tl;
  SHOAL_DCHECK(x.cols == c_in && y.rows == x.rows && y.cols == e);
  SHOAL_CHECK(f == 0 || mark.data != nullptr, "the data embedding needs its exogenous inputs");
  const T* w = p.conv.value.data;
  for (Index b = 0; b < windows; ++b)
    for (Index t = 0; t < tl; ++t) {
      T* yr = y.row(b * tl + t);
      for (Index o = 0; o < e; ++o) yr[o] = cfg.pos_embedding ? pe[size_t(t * e + o)] : T(0);
      for (Index k = 0; k < 3; ++k) {
        // Circular padding of 1: tap k reads step t + k − 1 of the window, wrapped.
        const T* xr = x.row(b * tl + (t + k - 1 + tl) % tl);
        for (Index c = 0; c < c_in; ++c) {
          const T v = xr[c];
          for (Index o = 0; o < e; ++o) yr[o] += w[(o * c_in + c) * 3 + k] * v;
        }
      }
      if (f > 0) {
        const T* we = p.embed.value.data;
        for (Index j = 0; j < f; ++j) {
          const T v = mark.data[(b * f + j) * mark.steps + mark.t0 + t];
          for (Index o = 0; o < e; ++o) yr[o] += we[o * f + j] * v;
        }
      }
    }
  dropout.forward(ctx, y, y, row0);
}

template <class T>
void DataEmbedding<T>::backward(const Ctx& ctx, ConstMat<T> x, Mark mark, ConstMat<T> dy, T* dmark,
                                Index row0) {
  const Index tl = cfg.tokens, c_in = cfg.c_in, e = cfg.hidden_size, f = cfg.exog,
              windows = x.rows / tl;
  const MatView<T> d = dz.mat().rows_block(0, x.rows);
  dropout.backward(ctx, ConstMat<T>(), ConstMat<T>(), dy, d, row0);
  T* gw = p.conv.grad.data;
  for (Index b = 0; b < windows; ++b)
    for (Index t = 0; t < tl; ++t) {
      const T* dr = d.row(b * tl + t);
      for (Index k = 0; k < 3; ++k) {
        const T* xr = x.row(b * tl + (t + k - 1 + tl) % tl);
        for (Index c = 0; c < c_in; ++c) {
          const T v = xr[c];
          for (Index o = 0; o < e; ++o) gw[(o * c_in + c) * 3 + k] += dr[o] * v;
        }
      }
      if (f > 0) {
        const T* we = p.embed.value.data;
        T* ge = p.embed.grad.data;
        for (Index j = 0; j < f; ++j) {
          const Index at = (b * f + j) * mark.steps + mark.t0 + t;
          const T v = mark.data[at];
          T acc = 0;
          for (Index o = 0; o < e; ++o) {
            ge[o * f + j] += dr[o] * v;
            acc += dr[o] * we[o * f + j];
          }
          if (dmark != nullptr) dmark[at] += acc;
        }
      }
    }
}

template <class T>
profile::Cost DataEmbedding<T>::forward_cost(double rows) const {
  const double e = double(cfg.hidden_size), taps = 3.0 * double(cfg.c_in) + double(cfg.exog);
  return {.flops = 2.0 * rows * e * taps + rows * e,
          .bytes = rows * (taps + 2.0 * e) * double(sizeof(T))};
}

template <class T>
profile::Cost DataEmbedding<T>::backward_cost(double rows) const {
  const double e = double(cfg.hidden_size), taps = 3.0 * double(cfg.c_in) + double(cfg.exog);
  return {.flops = 2.0 * rows * e * taps + rows * e,
          .bytes = rows * (taps + 2.0 * e) * double(sizeof(T))};
}

template struct DataEmbedding<float>;
template struct DataEmbedding<double>;

}  // namespace shoal::layers
