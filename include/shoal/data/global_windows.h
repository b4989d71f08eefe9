// Windows of univariate models trained globally: one model over every series of a Panel, as
// neuralforecast trains its MULTIVARIATE = False models (BaseModel._create_windows' univariate
// branch, TimeSeriesLoader). Legend: B windows, L input_size, h horizon, K series in the panel,
// X/F/S historical/future/static exogenous features, T panel length.
//
// A window is (series, start): the panel column it reads and the panel position of its first
// insample step (panels align series at their last row, data/windows.h). Its batch has N = 1:
//   insample_y [B, L, 1]  outsample_y [B, h, 1]  hist_exog [B, X, L, 1]
//   futr_exog [B, F, L + h, 1]  stat_exog [B, S] (the window's series' row, repeated per window)
// and each window is scaled with its own insample statistics.
//
// Training (GlobalBatcher). neuralforecast's DataLoader hands each step the next batch_size
// series of a permutation drawn afresh every epoch (the last batch of an epoch may be short),
// padded at the start to the batch's longest series. Its windows are cut from that padded
// block: candidates every step_size from the block's start (pad_left = L - 1 when
// start_padding, h zeros after the training cutoff T - val_size - test_size), valid when the
// window's own series has ≥ max(1, int(L·threshold)) real insample points and ≥
// max(1, int(h·threshold)) real horizon points. The valid windows of the batch's series are
// pooled (series-major) and windows_batch_size of them are drawn: uniformly without replacement
// when the pool has at least that many (torch.randperm's prefix), uniformly with replacement
// otherwise (torch.randint), all of them in order when windows_batch_size is 0. shoal draws from
// Philox streams (not torch's), so the distribution is neuralforecast's and a seed gives the same
// batches on every machine.
#pragma once

#include <span>
#include <vector>

#include "shoal/core/rng.h"
#include "shoal/data/windows.h"

namespace shoal::data {

struct SeriesWindow {
  Index series = 0;  // panel column
  Index start = 0;   // panel position of the first insample step
};

// Gathers and scales univariate windows into buffers sized once for `max_windows`; assemble()
// does not allocate.
class UnivariateAssembler {
 public:
  UnivariateAssembler(const Panel& panel, const WindowConfig& cfg, Index max_windows);
  // Windows (≤ max_windows) reading data in [0, end); `future`: positions at or after T read
  // futr exog from the panel's futr_df rows.
  const WindowBatch& assemble(std::span<const SeriesWindow> windows, Index end,
                              bool future = false);
  // Model outputs [B, h] (scaled) back to the data's scale, with the last batch's statistics.
  void inverse_scale(float* y_hat) const;
  Index max_windows() const { return max_b_; }

 private:
  void gather(const float* src, const float* future, Index len, SeriesWindow w, Index end, Index hf,
              float* dst) const;

  const Panel* panel_;
  WindowConfig cfg_;
  Index max_b_;
  // The panel's channels series-major, [(2 + X + F), K, T] (y, mask, hist, futr): a window's
  // steps are contiguous here, where the panel's [T, K] layout strides them K apart.
  std::vector<float> by_series_;
  std::vector<float> store_, scratch_;
  WindowBatch batch_;
};

// The windows of every series at the panel-level `starts` (predict, validation, cv): series-major,
// as neuralforecast flattens [series, Ws] to [Ws·series].
std::vector<SeriesWindow> every_series(Index n_series, std::span<const Index> starts);

// The training batches of a global fit (see the file comment).
class GlobalBatcher {
 public:
  GlobalBatcher(const Panel& panel, const WindowConfig& cfg, uint64_t seed);
  // The next step's windows, assembled and scaled. Throws shoal::Error when the step's series
  // are too short for one window or none of their windows is valid (neuralforecast raises).
  const WindowBatch& next();
  // The largest batch next() can return (windows_batch_size, or the largest pool when 0).
  Index max_windows() const { return max_b_; }
  // The series and the windows of the last step (tests, diagnostics).
  std::span<const Index> last_series() const { return {series_.data() + pos0_, size_t(count_)}; }
  std::span<const SeriesWindow> last_windows() const { return {out_.data(), size_t(out_b_)}; }
  // The pooled valid windows of the last step, before sampling.
  std::span<const SeriesWindow> last_pool() const { return {pool_.data(), size_t(pool_n_)}; }

 private:
  double series_mask_sum(Index k, Index a, Index b) const;
  void next_series();
  void pool_windows();

  const Panel* panel_;
  WindowConfig cfg_;
  Index end_ = 0, pad_left_ = 0, per_series_max_ = 0, max_b_ = 0;
  Index min_in_ = 1, min_out_ = 1;
  std::vector<Index> lengths_;  // rows of each panel series
  std::vector<double> prefix_;  // [K, T + 1] per-series prefix sums of the mask before end_
  std::vector<Index> series_;   // this epoch's permutation
  Index pos_ = 0, pos0_ = 0, count_ = 0;
  std::vector<SeriesWindow> pool_, out_;
  std::vector<Index> perm_;
  Index pool_n_ = 0, out_b_ = 0;
  RngStream series_rng_, window_rng_;
  UnivariateAssembler assembler_;
};

}  // namespace shoal::data
