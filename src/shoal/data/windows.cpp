#include "shoal/data/windows.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "shoal/core/arena.h"

namespace shoal::data {
namespace {

std::vector<Index> exog_columns(const SeriesSet& set, const std::vector<std::string>& names) {
  std::vector<Index> out;
  for (const auto& n : names) out.push_back(set.exog_column(n));
  return out;
}

void check_config(const WindowConfig& c) {
  SHOAL_CHECK(c.input_size >= 1, "input_size must be ≥ 1, got {}", c.input_size);
  SHOAL_CHECK(c.h >= 1, "h must be ≥ 1, got {}", c.h);
  SHOAL_CHECK(c.step_size >= 1, "step_size must be ≥ 1, got {}", c.step_size);
  SHOAL_CHECK(c.val_size == 0 || c.val_size >= c.h, "val_size must be 0 or ≥ h ({}), got {}", c.h,
              c.val_size);
  SHOAL_CHECK(c.test_size >= 0 && c.windows_batch_size >= 0,
              "test_size and windows_batch_size must be ≥ 0");
  SHOAL_CHECK(c.batch_size >= 1 && c.valid_batch_size >= 0 &&
                  (c.inference_windows_batch_size >= 1 || c.inference_windows_batch_size == -1),
              "batch_size must be ≥ 1, valid_batch_size ≥ 0 and inference_windows_batch_size ≥ 1 "
              "or -1, got {}, {}, {}",
              c.batch_size, c.valid_batch_size, c.inference_windows_batch_size);
}

}  // namespace

Index ExogSpec::cardinality(const std::string& name) const {
  SHOAL_CHECK(cardinalities.size() == categorical.size(),
              "categorical_cardinalities has {} entries for {} categorical columns",
              cardinalities.size(), categorical.size());
  for (size_t i = 0; i < categorical.size(); ++i)
    if (categorical[i] == name) return cardinalities[i];
  return 0;
}

namespace {

// The categorical flags of a stream's columns, and its codes checked: integers in [0, U].
std::vector<uint8_t> check_codes(const ExogSpec& spec, const std::vector<std::string>& cols,
                                 std::span<const float> values, size_t per_column,
                                 std::span<const float> future, size_t future_per_column) {
  std::vector<uint8_t> flags(cols.size(), 0);
  for (size_t c = 0; c < cols.size(); ++c) {
    const Index u = spec.cardinality(cols[c]);
    if (u == 0) continue;
    flags[c] = 1;
    auto check = [&](std::span<const float> v) {
      for (float x : v)
        if (!(x >= 0 && x <= float(u) && x == std::floor(x)))
          throw Error(fmt::format(
              "categorical exogenous column '{}' holds {}: its codes are integers in [0, {}] "
              "(its cardinality; 0: a category the training data did not have)",
              cols[c], x, u));
    };
    check(values.subspan(c * per_column, per_column));
    if (!future.empty()) check(future.subspan(c * future_per_column, future_per_column));
  }
  return flags;
}

}  // namespace

Panel::Panel(const SeriesSet& set, std::vector<Index> series, const ExogSpec& spec,
             const StaticTable* statics, const SeriesSet* futr_df, Index h_future)
    : set_(&set), series_(std::move(series)) {
  SHOAL_CHECK(!series_.empty(), "a panel needs at least one series");
  n_ = static_cast<Index>(series_.size());
  for (Index s : series_) t_ = std::max(t_, set.length(s));
  const auto hist_cols = exog_columns(set, spec.hist);
  const auto futr_cols = exog_columns(set, spec.futr);
  x_ = static_cast<Index>(hist_cols.size());
  f_ = static_cast<Index>(futr_cols.size());
  const auto tn = static_cast<size_t>(t_ * n_);
  y_.assign(tn, 0.0f);
  mask_.assign(tn, 0.0f);
  if (!set.sample_weight.empty()) weight_.assign(tn, 0.0f);
  hist_.assign(tn * size_t(x_), 0.0f);
  futr_.assign(tn * size_t(f_), 0.0f);
  for (Index n = 0; n < n_; ++n) {
    const Index s = series_[size_t(n)];
    const Index len = set.length(s), off = t_ - len, b = set.begin(s);
    for (Index t = 0; t < len; ++t) {
      const auto dst = static_cast<size_t>((off + t) * n_ + n);
      if (!weight_.empty()) weight_[dst] = static_cast<float>(set.sample_weight[size_t(b + t)]);
      if (set.available.empty() || set.available[size_t(b + t)] != 0) {
        y_[dst] = static_cast<float>(set.y[size_t(b + t)]);
        mask_[dst] = 1.0f;
      }
      for (Index x = 0; x < x_; ++x)
        hist_[size_t(x) * tn + dst] =
            static_cast<float>(set.exog[size_t(hist_cols[size_t(x)])][size_t(b + t)]);
      for (Index f = 0; f < f_; ++f)
        futr_[size_t(f) * tn + dst] =
            static_cast<float>(set.exog[size_t(futr_cols[size_t(f)])][size_t(b + t)]);
    }
  }
  mask_prefix_.assign(size_t(t_) + 1, 0.0);
  for (Index t = 0; t < t_; ++t) {
    double m = 0;
    for (Index n = 0; n < n_; ++n) m += mask_[size_t(t * n_ + n)];
    mask_prefix_[size_t(t) + 1] = mask_prefix_[size_t(t)] + m;
  }
  if (!spec.stat.empty()) {
    SHOAL_CHECK(statics != nullptr, "static exogenous features {} need a static table",
                fmt::join(spec.stat, ","));
    stat_ = static_matrix(*statics, set, series_, spec.stat);
    s_ = static_cast<Index>(spec.stat.size());
  }
  if (futr_df != nullptr && f_ > 0 && h_future > 0) {
    hf_ = h_future;
    const auto cols = exog_columns(*futr_df, spec.futr);
    futr_future_.assign(size_t(f_ * hf_ * n_), 0.0f);
    for (Index n = 0; n < n_; ++n) {
      const Index s = series_[size_t(n)];
      const std::string& id = set.ids[size_t(s)];
      const Index fs = futr_df->find(id);
      const int64_t first =
          advance(set.ds[size_t(set.begin(s) + set.length(s) - 1)], set.freq[size_t(s)]);
      if (fs < 0 || futr_df->length(fs) < hf_ || futr_df->ds[size_t(futr_df->begin(fs))] != first)
        throw Error(
            fmt::format("futr_df lacks the {} future rows of series '{}'", hf_, id),
            ErrorContext{
                .file = futr_df->source,
                .field = "ds",
                .expected = fmt::format("{} rows from ds {}", hf_,
                                        format_ds(first, set.time_kind, set.date_only)),
                .actual = fs < 0 ? "no rows for this id"
                                 : fmt::format("{} rows from ds {}", futr_df->length(fs),
                                               format_ds(futr_df->ds[size_t(futr_df->begin(fs))],
                                                         futr_df->time_kind, futr_df->date_only))});
      for (Index f = 0; f < f_; ++f)
        for (Index k = 0; k < hf_; ++k)
          futr_future_[size_t((f * hf_ + k) * n_ + n)] = static_cast<float>(
              futr_df->exog[size_t(cols[size_t(f)])][size_t(futr_df->begin(fs) + k)]);
    }
  }
  hist_cat_ = check_codes(spec, spec.hist, hist_, tn, {}, 0);
  futr_cat_ = check_codes(spec, spec.futr, futr_, tn, futr_future_, size_t(hf_ * n_));
  std::vector<float> stat_by_column(stat_.size());  // [S, N]
  for (Index n = 0; n < n_; ++n)
    for (Index c = 0; c < s_; ++c) stat_by_column[size_t(c * n_ + n)] = stat_[size_t(n * s_ + c)];
  stat_cat_ = check_codes(spec, spec.stat, stat_by_column, size_t(n_), {}, 0);
}

double Panel::mask_sum(Index a, Index b, Index end) const {
  a = std::clamp<Index>(a, 0, std::min(end, t_));
  b = std::clamp<Index>(b, 0, std::min(end, t_));
  return b > a ? mask_prefix_[size_t(b)] - mask_prefix_[size_t(a)] : 0.0;
}

Index train_end(const Panel& p, const WindowConfig& c) {
  return p.length() - c.val_size - c.test_size;
}
Index val_end(const Panel& p, const WindowConfig& c) {
  return p.length() - c.test_size;
}

std::vector<Index> train_window_starts(const Panel& p, const WindowConfig& c) {
  check_config(c);
  const Index end = train_end(p, c);
  const Index pad_left = c.start_padding ? c.input_size - 1 : 0;
  const Index padded = pad_left + std::max<Index>(end, 0) + c.h;
  const Index window = c.input_size + c.h;
  if (padded < window)
    throw Error("time series is too short for training",
                ErrorContext{.file = p.set().source,
                             .field = "input_size",
                             .expected = fmt::format("at least {} training rows (input_size {} "
                                                     "without start padding)",
                                                     c.input_size, c.input_size),
                             .actual = fmt::format("{} rows", end)});
  const auto min_in = std::max<Index>(
      1, static_cast<Index>(double(c.input_size) * c.min_insample_fraction * double(p.n_series())));
  const auto min_out = std::max<Index>(
      1, static_cast<Index>(double(c.h) * c.min_outsample_fraction * double(p.n_series())));
  std::vector<Index> out;
  for (Index q = 0; q + window <= padded; q += c.step_size) {
    const Index s = q - pad_left;
    if (p.mask_sum(s, s + c.input_size, end) >= double(min_in) &&
        p.mask_sum(s + c.input_size, s + window, end) >= double(min_out))
      out.push_back(s);
  }
  if (out.empty())
    throw Error("no windows available for training",
                ErrorContext{.file = p.set().source,
                             .expected = "a window with real points in both its input and horizon",
                             .actual = "none"});
  return out;
}

std::vector<Index> val_window_starts(const Panel& p, const WindowConfig& c) {
  check_config(c);
  if (c.val_size == 0) return {};
  const Index end = val_end(p, c);
  // neuralforecast slices the last L + val_size rows (fewer if the series is shorter) and
  // left-pads only when that slice is shorter than one window.
  Index first = std::max<Index>(0, end - c.input_size - c.val_size);
  Index len = end - first;
  if (len < c.input_size + c.h) {
    const Index pad = c.input_size - (len - c.val_size);
    first -= pad;
    len += pad;
  }
  std::vector<Index> out;
  for (Index s = first; s + c.input_size + c.h <= first + len; s += c.step_size) out.push_back(s);
  return out;
}

Index predict_window_start(const Panel& p, const WindowConfig& c) {
  check_config(c);
  return p.length() - c.input_size;
}

std::vector<Index> cv_window_starts(const Panel& p, const WindowConfig& c, Index n_windows) {
  check_config(c);
  SHOAL_CHECK(n_windows >= 1, "n_windows must be ≥ 1, got {}", n_windows);
  const Index test = c.h + c.step_size * (n_windows - 1);
  std::vector<Index> out;
  for (Index k = 0; k < n_windows; ++k)
    out.push_back(p.length() - test - c.input_size + k * c.step_size);
  return out;
}

WindowAssembler::WindowAssembler(const Panel& panel, const WindowConfig& cfg, Index max_windows)
    : panel_(&panel), cfg_(cfg), max_b_(max_windows) {
  check_config(cfg);
  SHOAL_CHECK(max_windows >= 1, "a window batch needs room for at least one window");
  const Index b = max_b_, l = cfg.input_size, h = cfg.h, n = panel.n_series();
  const Index per_window = n * (2 * l + 3 * h + panel.n_hist() * l + panel.n_futr() * (l + h) + 2);
  check_fits_in_memory(
      (double(b) * double(per_window) + double(n * panel.n_stat())) * sizeof(float),
      "input_size, h",
      fmt::format("input_size {}, h {}, {} series, {} windows per batch", l, h, n, b));
  store_.assign(size_t(b * per_window + n * panel.n_stat()), 0.0f);
  scratch_.assign(size_t(l + h), 0.0f);
  starts_.assign(size_t(b), 0);
  order_.assign(size_t(n), 0);
  std::iota(order_.begin(), order_.end(), Index{0});
  stat_ordered_.assign(size_t(n * panel.n_stat()), 0.0f);
  batch_ = WindowBatch{
      .L = l, .h = h, .N = n, .X = panel.n_hist(), .F = panel.n_futr(), .S = panel.n_stat()};
  batch_.hist_categorical = panel.hist_categorical();
  batch_.futr_categorical = panel.futr_categorical();
}

void WindowAssembler::gather(const float* src, const float* future, Index len, Index start,
                             Index end, Index hf, float* dst) const {
  const Index n = panel_->n_series(), t_max = panel_->length();
  for (Index t = 0; t < len; ++t) {
    const Index pos = start + t;
    float* d = dst + t * n;
    const float* row = nullptr;
    if (pos >= 0 && pos < end && pos < t_max)
      row = src + pos * n;
    else if (future != nullptr && pos >= t_max && pos < t_max + hf)
      row = future + (pos - t_max) * n;
    if (row == nullptr)
      std::fill(d, d + n, 0.0f);
    else if (identity_order_)
      std::memcpy(d, row, sizeof(float) * size_t(n));
    else
      for (Index k = 0; k < n; ++k) d[k] = row[order_[size_t(k)]];
  }
}

const WindowBatch& WindowAssembler::assemble(std::span<const Index> starts, Index end, bool future,
                                             std::span<const Index> series_order) {
  const auto b = static_cast<Index>(starts.size());
  SHOAL_CHECK(b >= 1 && b <= max_b_, "window batch of {} windows; the assembler holds 1..{}", b,
              max_b_);
  const Panel& p = *panel_;
  const Index l = cfg_.input_size, h = cfg_.h, n = p.n_series(), x = p.n_hist(), f = p.n_futr(),
              s = p.n_stat(), t = p.length();
  if (series_order.empty())
    std::iota(order_.begin(), order_.end(), Index{0});
  else {
    SHOAL_CHECK(static_cast<Index>(series_order.size()) == n, "series order of {} for {} series",
                series_order.size(), n);
    std::copy(series_order.begin(), series_order.end(), order_.begin());
  }
  identity_order_ = std::is_sorted(order_.begin(), order_.end());
  std::copy(starts.begin(), starts.end(), starts_.begin());
  float* q = store_.data();
  const auto take = [&q](Index count) {
    float* r = q;
    q += count;
    return r;
  };
  WindowBatch& w = batch_;
  w.B = b;
  w.insample_y = {take(b * l * n), Shape{b, l, n}};
  w.insample_mask = {take(b * l * n), Shape{b, l, n}};
  w.outsample_y = {take(b * h * n), Shape{b, h, n}};
  w.outsample_mask = {take(b * h * n), Shape{b, h, n}};
  w.outsample_y_raw = {take(b * h * n), Shape{b, h, n}};
  w.hist_exog = {take(b * x * l * n), Shape{b, x, l, n}};
  w.futr_exog = {take(b * f * (l + h) * n), Shape{b, f, l + h, n}};
  w.y_shift = {take(b * n), Shape{b, n}};
  w.y_scale = {take(b * n), Shape{b, n}};
  w.stat_exog = {stat_ordered_.data(), Shape{n, s}};
  w.starts = {starts_.data(), size_t(b)};
  w.series_order = {order_.data(), order_.size()};
  for (Index k = 0; k < n; ++k)
    for (Index j = 0; j < s; ++j)
      stat_ordered_[size_t(k * s + j)] = p.stat()[size_t(order_[size_t(k)] * s + j)];
  const Index hf = future ? p.h_future() : 0;
  const float* fut = future && hf > 0 ? p.futr_future().data() : nullptr;
  for (Index i = 0; i < b; ++i) {
    const Index st = starts[size_t(i)];
    gather(p.y().data(), nullptr, l, st, end, 0, w.insample_y.data + i * l * n);
    gather(p.y().data(), nullptr, h, st + l, end, 0, w.outsample_y.data + i * h * n);
    gather(p.mask().data(), nullptr, l, st, end, 0, w.insample_mask.data + i * l * n);
    gather(p.mask().data(), nullptr, h, st + l, end, 0, w.outsample_mask.data + i * h * n);
    for (Index k = 0; !p.weight().empty() && k < n; ++k)
      weigh_outsample(p, order_[size_t(k)], st + l, end, h, n,
                      w.outsample_mask.data + i * h * n + k);
    for (Index c = 0; c < x; ++c)
      gather(p.hist().data() + c * t * n, nullptr, l, st, end, 0,
             w.hist_exog.data + (i * x + c) * l * n);
    for (Index c = 0; c < f; ++c)
      gather(p.futr().data() + c * t * n, fut == nullptr ? nullptr : fut + c * hf * n, l + h, st,
             end, hf, w.futr_exog.data + (i * f + c) * (l + h) * n);
  }
  std::copy(w.outsample_y.begin(), w.outsample_y.end(), w.outsample_y_raw.data);
  apply_scaler();
  return w;
}

void weigh_outsample(const Panel& p, Index k, Index start, Index end, Index h, Index stride,
                     float* mask) {
  if (p.weight().empty()) return;
  const Index n = p.n_series(), stop = std::min(end, p.length());
  double sum = 0;
  for (Index t = 0; t < h; ++t)
    if (start + t >= 0 && start + t < stop) sum += p.weight()[size_t((start + t) * n + k)];
  const auto mean = static_cast<float>(sum / double(h));
  for (Index t = 0; t < h; ++t) mask[t * stride] *= mean;
}

void WindowAssembler::apply_scaler() {
  scale_window_batch(batch_, cfg_.scaler, scratch_.data());
}

void WindowAssembler::inverse_scale(float* y_hat) const {
  inverse_scale_batch(batch_, cfg_.scaler, y_hat);
}

void scale_window_batch(WindowBatch& w, ScalerType type, float* scratch) {
  const Index l = w.L, h = w.h, n = w.N;
  for (Index i = 0; i < w.B; ++i) {
    for (Index k = 0; k < n; ++k) {
      const float* mask = w.insample_mask.data + i * l * n + k;
      float* iy = w.insample_y.data + i * l * n + k;
      const ScaleStats ys = scaler_statistics(type, iy, n, mask, n, l, scratch);
      w.y_shift.data[i * n + k] = ys.shift;
      w.y_scale.data[i * n + k] = ys.scale;
      if (type == ScalerType::kIdentity) continue;
      scale_strided(type, iy, n, l, ys);
      scale_strided(type, w.outsample_y.data + i * h * n + k, n, h, ys);
      for (Index c = 0; c < w.X; ++c) {
        if (!w.hist_categorical.empty() && w.hist_categorical[size_t(c)] != 0) continue;
        float* v = w.hist_exog.data + (i * w.X + c) * l * n + k;
        scale_strided(type, v, n, l, scaler_statistics(type, v, n, mask, n, l, scratch));
      }
      for (Index c = 0; c < w.F; ++c) {
        if (!w.futr_categorical.empty() && w.futr_categorical[size_t(c)] != 0) continue;
        float* v = w.futr_exog.data + (i * w.F + c) * (l + h) * n + k;
        scale_strided(type, v, n, l + h, scaler_statistics(type, v, n, mask, n, l, scratch));
      }
    }
  }
}

void inverse_scale_batch(const WindowBatch& w, ScalerType type, float* y_hat) {
  for (Index i = 0; i < w.B; ++i)
    for (Index k = 0; k < w.N; ++k)
      unscale_strided(type, y_hat + i * w.h * w.N + k, w.N, w.h,
                      {w.y_shift.data[i * w.N + k], w.y_scale.data[i * w.N + k]});
}

void inverse_scale_insample(const WindowBatch& w, ScalerType type, float* out) {
  std::copy_n(w.insample_y.data, size_t(w.B * w.L * w.N), out);
  for (Index i = 0; i < w.B; ++i)
    for (Index k = 0; k < w.N; ++k)
      unscale_strided(type, out + i * w.L * w.N + k, w.N, w.L,
                      {w.y_shift.data[i * w.N + k], w.y_scale.data[i * w.N + k]});
}

WindowSampler::WindowSampler(std::vector<Index> valid_starts, Index batch_size, Index n_series,
                             bool shuffle_series, uint64_t seed, uint64_t stream)
    : valid_(std::move(valid_starts)),
      all_(batch_size == 0),
      shuffle_series_(shuffle_series),
      rng_(seed, stream) {
  SHOAL_CHECK(!valid_.empty(), "no valid windows to sample from");
  SHOAL_CHECK(valid_.size() < (size_t{1} << 32), "too many windows: {}", valid_.size());
  perm_.resize(valid_.size());
  std::iota(perm_.begin(), perm_.end(), Index{0});
  out_.resize(batch_size == 0 ? valid_.size() : size_t(batch_size));
  order_.resize(size_t(n_series));
  std::iota(order_.begin(), order_.end(), Index{0});
}

void WindowSampler::next() {
  const size_t v = valid_.size(), b = out_.size();
  if (all_) {
    // windows_batch_size 0: every valid window, in order (torch.arange).
    std::copy(valid_.begin(), valid_.end(), out_.begin());
  } else if (v >= b) {
    // A partial Fisher-Yates pass: a uniform b-subset in uniform order (torch.randperm prefix).
    for (size_t i = 0; i < b; ++i) {
      const size_t j = i + rng_.below(static_cast<uint32_t>(v - i));
      std::swap(perm_[i], perm_[j]);
      out_[i] = valid_[size_t(perm_[i])];
    }
  } else {
    for (size_t i = 0; i < b; ++i) out_[i] = valid_[rng_.below(static_cast<uint32_t>(v))];
  }
  if (shuffle_series_ && order_.size() > 1)
    for (size_t i = order_.size() - 1; i > 0; --i)
      std::swap(order_[i], order_[rng_.below(static_cast<uint32_t>(i + 1))]);
}

TrainBatcher::TrainBatcher(const Panel& panel, const WindowConfig& cfg, uint64_t seed)
    : end_(train_end(panel, cfg)),
      sampler_(train_window_starts(panel, cfg), cfg.windows_batch_size, panel.n_series(),
               cfg.shuffle_series, seed),
      assembler_(panel, cfg, static_cast<Index>(sampler_.starts().size())) {}

const WindowBatch& TrainBatcher::next() {
  sampler_.next();
  return assembler_.assemble(sampler_.starts(), end_, false, sampler_.series_order());
}

}  // namespace shoal::data
