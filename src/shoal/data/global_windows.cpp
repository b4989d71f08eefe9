#include "shoal/data/global_windows.h"

#include <algorithm>
#include <numeric>

#include "shoal/core/arena.h"

namespace shoal::data {
namespace {

// Philox streams of a global fit's sampling: the epoch permutations and the window draws.
constexpr uint64_t kSeriesStream = 0x5e41'e500;
constexpr uint64_t kWindowStream = 0x5eed;

// Candidate windows in a padded training block of `rows` data rows.
Index candidates(Index rows, Index pad_left, const WindowConfig& c) {
  const Index padded = pad_left + std::max<Index>(rows, 0) + c.h;
  return padded < c.input_size + c.h ? 0 : (padded - c.input_size - c.h) / c.step_size + 1;
}

}  // namespace

UnivariateAssembler::UnivariateAssembler(const Panel& panel, const WindowConfig& cfg,
                                         Index max_windows)
    : panel_(&panel), cfg_(cfg), max_b_(max_windows) {
  SHOAL_CHECK(max_windows >= 1, "a window batch needs room for at least one window");
  const Index b = max_b_, l = cfg.input_size, h = cfg.h;
  const Index per_window =
      2 * l + 3 * h + panel.n_hist() * l + panel.n_futr() * (l + h) + 2 + panel.n_stat();
  check_fits_in_memory(double(b) * double(per_window) * sizeof(float), "input_size, h",
                       fmt::format("input_size {}, h {}, {} windows per batch", l, h, b));
  store_.assign(size_t(b * per_window), 0.0f);
  scratch_.assign(size_t(l + h), 0.0f);
  const Index k = panel.n_series(), t = panel.length(), x = panel.n_hist(), f = panel.n_futr();
  by_series_.resize(size_t((2 + x + f) * k * t));
  const auto transpose = [&](const float* src, Index channel) {
    float* dst = by_series_.data() + channel * k * t;
    for (Index r = 0; r < t; ++r)
      for (Index j = 0; j < k; ++j) dst[j * t + r] = src[r * k + j];
  };
  transpose(panel.y().data(), 0);
  transpose(panel.mask().data(), 1);
  for (Index c = 0; c < x; ++c) transpose(panel.hist().data() + c * t * k, 2 + c);
  for (Index c = 0; c < f; ++c) transpose(panel.futr().data() + c * t * k, 2 + x + c);
  batch_ = WindowBatch{
      .L = l, .h = h, .N = 1, .X = panel.n_hist(), .F = panel.n_futr(), .S = panel.n_stat()};
  batch_.hist_categorical = panel.hist_categorical();
  batch_.futr_categorical = panel.futr_categorical();
}

void UnivariateAssembler::gather(const float* src, const float* future, Index len, SeriesWindow w,
                                 Index end, Index hf, float* dst) const {
  // src: one channel of by_series_ ([K, T]); future: that channel's [hf, K] rows after T.
  const Index n = panel_->n_series(), t_max = panel_->length();
  const float* row = src + w.series * t_max;
  const Index stop = w.start + len;
  const Index lo = std::min(std::max<Index>(w.start, 0), stop);
  const Index hi = std::max(lo, std::min({end, t_max, stop}));
  std::fill(dst, dst + (lo - w.start), 0.0f);
  std::copy(row + lo, row + hi, dst + (lo - w.start));
  for (Index pos = hi; pos < stop; ++pos) {
    float v = 0.0f;
    if (future != nullptr && pos >= t_max && pos < t_max + hf)
      v = future[(pos - t_max) * n + w.series];
    dst[pos - w.start] = v;
  }
}

const WindowBatch& UnivariateAssembler::assemble(std::span<const SeriesWindow> windows, Index end,
                                                 bool future) {
  const auto b = static_cast<Index>(windows.size());
  SHOAL_CHECK(b >= 1 && b <= max_b_, "window batch of {} windows; the assembler holds 1..{}", b,
              max_b_);
  const Panel& p = *panel_;
  const Index l = cfg_.input_size, h = cfg_.h, k = p.n_series(), x = p.n_hist(), f = p.n_futr(),
              s = p.n_stat(), t = p.length();
  float* q = store_.data();
  const auto take = [&q](Index count) {
    float* r = q;
    q += count;
    return r;
  };
  WindowBatch& w = batch_;
  w.B = b;
  w.insample_y = {take(b * l), Shape{b, l, 1}};
  w.insample_mask = {take(b * l), Shape{b, l, 1}};
  w.outsample_y = {take(b * h), Shape{b, h, 1}};
  w.outsample_mask = {take(b * h), Shape{b, h, 1}};
  w.outsample_y_raw = {take(b * h), Shape{b, h, 1}};
  w.hist_exog = {take(b * x * l), Shape{b, x, l, 1}};
  w.futr_exog = {take(b * f * (l + h)), Shape{b, f, l + h, 1}};
  w.y_shift = {take(b), Shape{b, 1}};
  w.y_scale = {take(b), Shape{b, 1}};
  w.stat_exog = {take(b * s), Shape{b, s}};
  w.starts = {};
  w.series_order = {};
  const Index hf = future ? p.h_future() : 0;
  const float* fut = future && hf > 0 ? p.futr_future().data() : nullptr;
  for (Index i = 0; i < b; ++i) {
    const SeriesWindow sw = windows[size_t(i)];
    SHOAL_CHECK(sw.series >= 0 && sw.series < k, "window of series {} in a panel of {}", sw.series,
                k);
    const float* ch = by_series_.data();
    gather(ch, nullptr, l, sw, end, 0, w.insample_y.data + i * l);
    gather(ch, nullptr, h, {sw.series, sw.start + l}, end, 0, w.outsample_y.data + i * h);
    gather(ch + k * t, nullptr, l, sw, end, 0, w.insample_mask.data + i * l);
    gather(ch + k * t, nullptr, h, {sw.series, sw.start + l}, end, 0,
           w.outsample_mask.data + i * h);
    weigh_outsample(p, sw.series, sw.start + l, end, h, 1, w.outsample_mask.data + i * h);
    for (Index c = 0; c < x; ++c)
      gather(ch + (2 + c) * k * t, nullptr, l, sw, end, 0, w.hist_exog.data + (i * x + c) * l);
    for (Index c = 0; c < f; ++c)
      gather(ch + (2 + x + c) * k * t, fut == nullptr ? nullptr : fut + c * hf * k, l + h, sw, end,
             hf, w.futr_exog.data + (i * f + c) * (l + h));
    std::copy_n(p.stat().data() + sw.series * s, s, w.stat_exog.data + i * s);
  }
  std::copy(w.outsample_y.begin(), w.outsample_y.end(), w.outsample_y_raw.data);
  scale_window_batch(w, cfg_.scaler, scratch_.data());
  return w;
}

void UnivariateAssembler::inverse_scale(float* y_hat) const {
  inverse_scale_batch(batch_, cfg_.scaler, y_hat);
}

std::vector<SeriesWindow> every_series(Index n_series, std::span<const Index> starts) {
  std::vector<SeriesWindow> out;
  out.reserve(size_t(n_series) * starts.size());
  for (Index k = 0; k < n_series; ++k)
    for (Index s : starts) out.push_back({k, s});
  return out;
}

GlobalBatcher::GlobalBatcher(const Panel& panel, const WindowConfig& cfg, uint64_t seed)
    : panel_(&panel),
      cfg_(cfg),
      series_rng_(seed, kSeriesStream),
      window_rng_(seed, kWindowStream),
      assembler_(panel, cfg, [&] {
        // The largest batch: every window of the batch_size longest blocks, or windows_batch_size.
        const Index rows = train_end(panel, cfg);
        const Index pad = cfg.start_padding ? cfg.input_size - 1 : 0;
        const Index pool = std::min(cfg.batch_size, panel.n_series()) * candidates(rows, pad, cfg);
        return std::max<Index>(cfg.windows_batch_size > 0 ? cfg.windows_batch_size : pool, 1);
      }()) {
  const Index k = panel.n_series(), t = panel.length();
  end_ = train_end(panel, cfg);
  pad_left_ = cfg.start_padding ? cfg.input_size - 1 : 0;
  per_series_max_ = candidates(end_, pad_left_, cfg);
  max_b_ = assembler_.max_windows();
  // Univariate: the threshold counts the points of the window's own series (n_series = 1).
  min_in_ =
      std::max<Index>(1, static_cast<Index>(double(cfg.input_size) * cfg.min_insample_fraction));
  min_out_ = std::max<Index>(1, static_cast<Index>(double(cfg.h) * cfg.min_outsample_fraction));
  lengths_.resize(size_t(k));
  prefix_.assign(size_t(k * (t + 1)), 0.0);
  for (Index j = 0; j < k; ++j) {
    lengths_[size_t(j)] = panel.set().length(panel.series()[size_t(j)]);
    double* pre = prefix_.data() + j * (t + 1);
    for (Index r = 0; r < t; ++r)
      pre[r + 1] = pre[r] + (r < end_ ? double(panel.mask()[size_t(r * k + j)]) : 0.0);
  }
  series_.resize(size_t(k));
  pos_ = k;  // the first next() starts an epoch
  pool_.resize(size_t(std::min(cfg.batch_size, k) * per_series_max_));
  perm_.resize(pool_.size());
  out_.resize(size_t(max_b_));
}

double GlobalBatcher::series_mask_sum(Index k, Index a, Index b) const {
  const Index t = panel_->length();
  a = std::clamp<Index>(a, 0, t);
  b = std::clamp<Index>(b, 0, t);
  const double* pre = prefix_.data() + k * (t + 1);
  return b > a ? pre[b] - pre[a] : 0.0;
}

void GlobalBatcher::next_series() {
  const Index k = panel_->n_series();
  if (pos_ >= k) {
    // A fresh permutation every epoch (RandomSampler's randperm): Fisher-Yates from the identity.
    std::iota(series_.begin(), series_.end(), Index{0});
    for (size_t i = series_.size() - 1; i > 0; --i)
      std::swap(series_[i], series_[series_rng_.below(static_cast<uint32_t>(i + 1))]);
    pos_ = 0;
  }
  pos0_ = pos_;
  count_ = std::min(cfg_.batch_size, k - pos_);
  pos_ += count_;
}

void GlobalBatcher::pool_windows() {
  const Index t = panel_->length(), l = cfg_.input_size, h = cfg_.h;
  Index longest = 0;
  for (Index i = 0; i < count_; ++i)
    longest = std::max(longest, lengths_[size_t(series_[size_t(pos0_ + i)])]);
  // The batch's block starts where its longest series does; val and test rows are cut from
  // every series' end alike.
  const Index block_rows = longest - (t - end_);
  const Index n_cand = candidates(block_rows, pad_left_, cfg_);
  if (n_cand == 0)
    throw Error("time series is too short for training",
                ErrorContext{.file = panel_->set().source,
                             .field = "input_size",
                             .expected = fmt::format("at least {} training rows in the longest "
                                                     "series of a batch (input_size {} without "
                                                     "start padding)",
                                                     l, l),
                             .actual = fmt::format("{} rows", block_rows)});
  const Index first = (t - longest) - pad_left_;
  pool_n_ = 0;
  for (Index i = 0; i < count_; ++i) {
    const Index k = series_[size_t(pos0_ + i)];
    for (Index c = 0; c < n_cand; ++c) {
      const Index s = first + c * cfg_.step_size;
      if (series_mask_sum(k, s, s + l) >= double(min_in_) &&
          series_mask_sum(k, s + l, s + l + h) >= double(min_out_))
        pool_[size_t(pool_n_++)] = {k, s};
    }
  }
  if (pool_n_ == 0)
    throw Error("no windows available for training",
                ErrorContext{.file = panel_->set().source,
                             .expected = "a window with real points in both its input and horizon",
                             .actual = "none in a batch of series"});
}

const WindowBatch& GlobalBatcher::next() {
  next_series();
  pool_windows();
  const auto v = static_cast<size_t>(pool_n_);
  if (cfg_.windows_batch_size == 0) {
    out_b_ = pool_n_;
    std::copy_n(pool_.begin(), v, out_.begin());
  } else {
    const auto b = static_cast<size_t>(cfg_.windows_batch_size);
    out_b_ = cfg_.windows_batch_size;
    if (v >= b) {
      // A partial Fisher-Yates pass from the identity: a uniform b-subset (randperm's prefix).
      std::iota(perm_.begin(), perm_.begin() + ptrdiff_t(v), Index{0});
      for (size_t i = 0; i < b; ++i) {
        const size_t j = i + window_rng_.below(static_cast<uint32_t>(v - i));
        std::swap(perm_[i], perm_[j]);
        out_[i] = pool_[size_t(perm_[i])];
      }
    } else {
      for (size_t i = 0; i < b; ++i) out_[i] = pool_[window_rng_.below(static_cast<uint32_t>(v))];
    }
  }
  return assembler_.assemble({out_.data(), size_t(out_b_)}, end_);
}

}  // namespace shoal::data
