#include "shoal/layers/categorical_embedding.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include "shoal/core/error.h"

namespace shoal::layers {

template <class T>
CategoricalEmbedding<T>::CategoricalEmbedding(Config config) : cfg(std::move(config)) {
  SHOAL_CHECK(Index(cfg.columns.size()) <= cfg.channels,
              "CategoricalEmbedding: {} categorical columns in a stream of {} channels",
              cfg.columns.size(), cfg.channels);
  std::vector<bool> seen(size_t(cfg.channels), false);
  for (const CategoricalColumn& col : cfg.columns) {
    SHOAL_CHECK(col.channel >= 0 && col.channel < cfg.channels && !seen[size_t(col.channel)],
                "CategoricalEmbedding: channel {} is not a distinct channel of [0, {})",
                col.channel, cfg.channels);
    seen[size_t(col.channel)] = true;
    SHOAL_CHECK(col.cardinality >= 1 && col.dim >= 1,
                "CategoricalEmbedding: a column needs cardinality ≥ 1 and dim ≥ 1, got {} and {}",
                col.cardinality, col.dim);
  }
  tables.resize(cfg.columns.size());
  for (Index c = 0; c < cfg.channels; ++c)
    if (!seen[size_t(c)]) continuous_channels.push_back(c);
}

template <class T>
void CategoricalEmbedding<T>::plan(Planner& planner) {
  Index widest = 1;
  for (size_t k = 0; k < tables.size(); ++k) {
    const CategoricalColumn& col = cfg.columns[k];
    planner.param(tables[k], std::to_string(k) + ".weight", {col.cardinality + 1, col.dim});
    widest = std::max(widest, col.dim);
  }
  if (!tables.empty())
    planner.buffer(oov, Region::kActivations, "oov_rows", {Index(tables.size()), widest});
}

template <class T>
void CategoricalEmbedding<T>::init(RngStream& rng) {
  for (Param<T>& w : tables) {
    if (!rng.replays_torch()) {
      for (T& v : w.value) v = static_cast<T>(rng.normal());
      continue;
    }
    // nn.Embedding's reset_parameters: normal_ on the float32 table, one call per table.
    std::vector<float> drawn(size_t(w.value.numel()));
    rng.torch_normal_fill(drawn.data(), w.value.numel());
    std::copy(drawn.begin(), drawn.end(), w.value.data);
  }
}

namespace {

// The code at x (a float or double holding an integer), checked against [0, cardinality].
template <class T>
Index code_of(T x, Index cardinality) {
  const Index code = static_cast<Index>(x);
  if (!(x >= 0 && T(code) == x && code <= cardinality)) [[unlikely]]
    throw Error(fmt::format(
        "a categorical exogenous value is {}: codes are integers in [0, {}] (0: a category the "
        "training data did not have)",
        double(x), cardinality));
  return code;
}

}  // namespace

template <class T>
void CategoricalEmbedding<T>::forward(const T* x, Index rows, Index positions, T* y) {
  const Index c_in = cfg.channels, c_out = out_channels(),
              widest = tables.empty() ? 0 : oov.view.shape[1];
  // The mean rows, once per call (the tables change every step).
  for (size_t k = 0; k < tables.size(); ++k) {
    const Index u = cfg.columns[k].cardinality, d = cfg.columns[k].dim;
    const T* w = tables[k].value.data;
    T* mean = oov.view.data + Index(k) * widest;
    std::fill_n(mean, d, T(0));
    for (Index i = 1; i <= u; ++i)
      for (Index j = 0; j < d; ++j) mean[j] += w[i * d + j];
    for (Index j = 0; j < d; ++j) mean[j] /= T(u);
  }
  for (Index r = 0; r < rows; ++r) {
    const T* xr = x + r * c_in * positions;
    T* yr = y + r * c_out * positions;
    Index out = 0;
    for (Index c : continuous_channels)
      std::copy_n(xr + c * positions, positions, yr + out++ * positions);
    for (size_t k = 0; k < tables.size(); ++k) {
      const CategoricalColumn& col = cfg.columns[k];
      const T* codes = xr + col.channel * positions;
      const T* w = tables[k].value.data;
      const T* mean = oov.view.data + Index(k) * widest;
      for (Index p = 0; p < positions; ++p) {
        const Index code = code_of(codes[p], col.cardinality);
        const T* row = code == 0 ? mean : w + code * col.dim;
        for (Index j = 0; j < col.dim; ++j) yr[(out + j) * positions + p] = row[j];
      }
      out += col.dim;
    }
  }
}

template <class T>
void CategoricalEmbedding<T>::backward(const T* x, Index rows, Index positions, const T* dy) {
  const Index c_in = cfg.channels, c_out = out_channels(),
              widest = tables.empty() ? 0 : oov.view.shape[1];
  Index out = continuous();
  for (size_t k = 0; k < tables.size(); ++k) {
    const CategoricalColumn& col = cfg.columns[k];
    T* g = tables[k].grad.data;
    // Code 0's gradient, summed here and spread over rows 1..U once (the mean's gradient).
    T* unseen = oov.view.data + Index(k) * widest;
    std::fill_n(unseen, col.dim, T(0));
    bool any_unseen = false;
    for (Index r = 0; r < rows; ++r) {
      const T* codes = x + (r * c_in + col.channel) * positions;
      const T* dyr = dy + (r * c_out + out) * positions;
      for (Index p = 0; p < positions; ++p) {
        const Index code = code_of(codes[p], col.cardinality);
        T* dst = code == 0 ? unseen : g + code * col.dim;
        any_unseen |= code == 0;
        for (Index j = 0; j < col.dim; ++j) dst[j] += dyr[j * positions + p];
      }
    }
    if (any_unseen)
      for (Index i = 1; i <= col.cardinality; ++i)
        for (Index j = 0; j < col.dim; ++j) g[i * col.dim + j] += unseen[j] / T(col.cardinality);
    out += col.dim;
  }
}

Index categorical_embedding_dim(std::string_view rule, Index cardinality) {
  SHOAL_CHECK(cardinality >= 1, "a categorical column needs a cardinality ≥ 1, got {}",
              cardinality);
  Index dim = 0;
  const auto [end, ec] = std::from_chars(rule.data(), rule.data() + rule.size(), dim);
  if (ec == std::errc() && end == rule.data() + rule.size()) {
    SHOAL_CHECK(dim >= 1, "cat_emb_dim must be ≥ 1, got {}", dim);
    return dim;
  }
  const double u = double(cardinality);
  if (rule == "fastai") return std::min<Index>(50, Index(std::ceil(1.6 * std::pow(u, 0.56))));
  if (rule == "sqrt") return std::min<Index>(50, Index(std::ceil(std::sqrt(u))));
  if (rule == "half") return std::min<Index>(50, (cardinality + 1) / 2);
  throw Error(
      fmt::format("cat_emb_dim is '{}': use fastai, sqrt, half or a positive integer", rule));
}

template struct CategoricalEmbedding<float>;
template struct CategoricalEmbedding<double>;

}  // namespace shoal::layers
