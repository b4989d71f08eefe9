// Windows over time series for TSMixer/TSMixerx, as neuralforecast's BaseModel cuts them
// (_create_windows, _normalization, _parse_windows; spec tsmixerx.md §5). Shapes (legend:
// B windows, L input_size, h horizon, N series modelled jointly, T panel length, X/F/S
// historical/future/static exogenous features):
//
// A Panel is N series of a SeriesSet laid side by side, **aligned at their last row** and
// left-padded with zeros (mask 0) up to the longest one, as neuralforecast's dataset does:
// channel arrays are [T, N] (series fastest), so the L×N block of one window is contiguous.
//
// A window is named by `start`: the panel position of its first insample step. It covers
// positions [start, start + L + h); positions outside [0, end) read as zero with mask 0 (end is
// where the data the window may see stops: the training cutoff, or T). For predict windows the
// future exogenous values after the panel's end come from the futr_df rows given to the Panel.
//
//   training   starts 0 - pad, step_size apart, over the span [0, T - val - test) right-padded
//              with h zeros (and left-padded with L - 1 zeros when start_padding); a window is
//              valid iff Σ insample mask ≥ max(1, int(L·min_insample_fraction·N)) and
//              Σ horizon mask ≥ max(1, int(h·min_outsample_fraction·N)), sums over time and
//              all N series. One series of T rows gives T - L valid windows.
//   validation the last L + val_size rows before the test part, left-padded if too short,
//              windows step_size apart: (val_size - h) / step_size + 1 of them.
//   predict    one window: start = T - L (left-padded when T < L).
//   cv         n_windows windows step_size apart ending at T: start = T - test - L + k·step,
//              test = h + step·(n_windows - 1).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "shoal/core/rng.h"
#include "shoal/core/tensor.h"
#include "shoal/data/scalers.h"
#include "shoal/data/timeseries.h"

namespace shoal::data {

struct WindowConfig {
  Index input_size = 0;  // L
  Index h = 0;
  Index step_size = 1;
  Index val_size = 0;
  Index test_size = 0;
  bool start_padding = false;          // neuralforecast start_padding_enabled
  double min_insample_fraction = 0.0;  // training_data_availability_threshold
  double min_outsample_fraction = 0.0;
  Index windows_batch_size = 32;  // training windows per step; 0: every valid window
  // Univariate models trained globally (data/global_windows.h): series per training step, per
  // validation batch (0: batch_size), and windows per inference pass (-1: all at once).
  Index batch_size = 32;
  Index valid_batch_size = 0;
  Index inference_windows_batch_size = 32;
  ScalerType scaler = ScalerType::kIdentity;
  bool shuffle_series = true;  // N > 1: permute the series every training step (v3.x)
};

// Which exogenous columns go where (names of SeriesSet / StaticTable columns).
struct ExogSpec {
  std::vector<std::string> hist;
  std::vector<std::string> futr;
  std::vector<std::string> stat;
  // Categorical columns among them (neuralforecast's cat_exog_list) and each one's cardinality
  // U: their values are codes, integers in [0, U] with 0 for a category the training data did
  // not have; the window scaler leaves them alone and the trainer embeds them
  // (train/exog_embeddings.h).
  std::vector<std::string> categorical;
  std::vector<Index> cardinalities;  // one per categorical column
  // U of column `name`; 0 when it is not categorical.
  Index cardinality(const std::string& name) const;
};

class Panel {
 public:
  // `series`: indices into `set`, in the order the model sees them (sorted ids: ascending).
  // `statics` is needed when spec.stat is non-empty; `futr_df` (same columns as `set`'s futr
  // exog, h_future rows per series continuing each series) when predict windows use futr exog.
  Panel(const SeriesSet& set, std::vector<Index> series, const ExogSpec& spec,
        const StaticTable* statics = nullptr, const SeriesSet* futr_df = nullptr,
        Index h_future = 0);

  Index n_series() const { return n_; }
  Index length() const { return t_; }  // T
  Index n_hist() const { return x_; }
  Index n_futr() const { return f_; }
  Index n_stat() const { return s_; }
  Index h_future() const { return hf_; }
  const std::vector<Index>& series() const { return series_; }
  const SeriesSet& set() const { return *set_; }

  // [T, N] arrays; exogenous ones [X or F, T, N]; future [F, h_future, N]; static [N, S].
  const std::vector<float>& y() const { return y_; }
  const std::vector<float>& mask() const { return mask_; }
  const std::vector<float>& hist() const { return hist_; }
  const std::vector<float>& futr() const { return futr_; }
  const std::vector<float>& futr_future() const { return futr_future_; }
  const std::vector<float>& stat() const { return stat_; }
  // [X], [F], [S]: 1 for a categorical channel (ExogSpec::categorical), 0 for a continuous one.
  const std::vector<uint8_t>& hist_categorical() const { return hist_cat_; }
  const std::vector<uint8_t>& futr_categorical() const { return futr_cat_; }
  const std::vector<uint8_t>& stat_categorical() const { return stat_cat_; }
  // [T, N] the series' sample weights (0 at left padding); empty when the set has none.
  const std::vector<float>& weight() const { return weight_; }
  // Σ over positions [a, b) ∩ [0, end) and over series of the mask.
  double mask_sum(Index a, Index b, Index end) const;

 private:
  const SeriesSet* set_;
  std::vector<Index> series_;
  Index n_ = 0, t_ = 0, x_ = 0, f_ = 0, s_ = 0, hf_ = 0;
  std::vector<float> y_, mask_, hist_, futr_, futr_future_, stat_, weight_;
  std::vector<uint8_t> hist_cat_, futr_cat_, stat_cat_;
  std::vector<double> mask_prefix_;  // [T + 1] prefix sums of the per-position mask sum
};

// Valid training starts, ascending. Throws shoal::Error when the span is shorter than L + h
// ("too short") or no window is valid.
std::vector<Index> train_window_starts(const Panel& p, const WindowConfig& c);
// End of the data a training window may read: T - val_size - test_size.
Index train_end(const Panel& p, const WindowConfig& c);
std::vector<Index> val_window_starts(const Panel& p, const WindowConfig& c);
Index val_end(const Panel& p, const WindowConfig& c);  // T - test_size
Index predict_window_start(const Panel& p, const WindowConfig& c);
std::vector<Index> cv_window_starts(const Panel& p, const WindowConfig& c, Index n_windows);

// One batch in the model's layout (neuralforecast's windows_batch), float32 row-major, views into a
// WindowAssembler's buffers (valid until its next assemble). Position n of the N axis holds panel
// series series_order[n]; y values and exogenous features are scaled with the window's insample
// statistics, per series and channel.
struct WindowBatch {
  Index B = 0, L = 0, h = 0, N = 0, X = 0, F = 0, S = 0;
  TensorView<float> insample_y;         // [B, L, N] scaled
  TensorView<float> insample_mask;      // [B, L, N]
  TensorView<float> outsample_y;        // [B, h, N] scaled (the training loss target)
  TensorView<float> outsample_mask;     // [B, h, N]
  TensorView<float> outsample_y_raw;    // [B, h, N] unscaled (the validation loss target)
  TensorView<float> hist_exog;          // [B, X, L, N]
  TensorView<float> futr_exog;          // [B, F, L + h, N]
  TensorView<float> stat_exog;          // [N, S]
  TensorView<float> y_shift;            // [B, N] y's statistics, for inverse_scale
  TensorView<float> y_scale;            // [B, N]
  std::span<const Index> starts;        // [B]
  std::span<const Index> series_order;  // [N]
  // [X], [F]: 1 for a categorical channel, which the window scaler leaves unscaled; empty: none.
  std::span<const uint8_t> hist_categorical, futr_categorical;
};

// Gathers and scales windows into buffers sized once for `max_windows`; assemble() does not
// allocate.
class WindowAssembler {
 public:
  WindowAssembler(const Panel& panel, const WindowConfig& cfg, Index max_windows);
  // Windows at `starts` (≤ max_windows), reading data in [0, end); `future`: positions at or
  // after T read futr exog from the panel's futr_df rows. Empty series_order: panel order.
  const WindowBatch& assemble(std::span<const Index> starts, Index end, bool future = false,
                              std::span<const Index> series_order = {});
  // Maps model outputs [B, h, N] (in scaled space) back to the data's scale in place, with the
  // y statistics of the last assembled batch.
  void inverse_scale(float* y_hat) const;
  const WindowBatch& batch() const { return batch_; }

 private:
  void gather(const float* src, const float* future, Index len, Index start, Index end, Index hf,
              float* dst) const;
  void apply_scaler();

  const Panel* panel_;
  WindowConfig cfg_;
  Index max_b_;
  std::vector<float> store_;
  std::vector<float> scratch_;
  std::vector<Index> starts_, order_;
  bool identity_order_ = true;
  std::vector<float> stat_ordered_;
  WindowBatch batch_;
};

// The window scaler of a batch: y, hist and futr exog of every window and series scaled in place
// with their insample statistics (y's kept in y_shift / y_scale); and its inverse on model outputs
// [B, h, N]. `scratch` holds L + h floats.
void scale_window_batch(WindowBatch& w, ScalerType type, float* scratch);
void inverse_scale_batch(const WindowBatch& w, ScalerType type, float* y_hat);
// The batch's insample y [B, L, N] in the data's scale, written to `out` (what neuralforecast's
// validation gives a loss as y_insample: MASE's scale).
void inverse_scale_insample(const WindowBatch& w, ScalerType type, float* out);
// Multiplies window i's outsample mask of series k ([h] values at `mask`, stride `stride`) by the
// mean sample weight of its h output positions [start, start + h) of panel column k, positions
// at or after `end` (or T) counting 0: neuralforecast's per-window sample_weight. No-op without
// weights.
void weigh_outsample(const Panel& p, Index k, Index start, Index end, Index h, Index stride,
                     float* mask);

// Per training step: windows_batch_size of the valid starts, uniformly without replacement
// (with replacement when fewer are valid), plus the series order (a fresh permutation when
// shuffle_series and N > 1, identity otherwise). Philox-driven; does not allocate per step.
class WindowSampler {
 public:
  WindowSampler(std::vector<Index> valid_starts, Index batch_size, Index n_series,
                bool shuffle_series, uint64_t seed, uint64_t stream = 0x5eed);
  void next();
  std::span<const Index> starts() const { return {out_.data(), out_.size()}; }
  std::span<const Index> series_order() const { return {order_.data(), order_.size()}; }
  Index n_valid() const { return static_cast<Index>(valid_.size()); }

 private:
  std::vector<Index> valid_;
  std::vector<Index> perm_;
  std::vector<Index> out_;
  std::vector<Index> order_;
  bool all_;
  bool shuffle_series_;
  RngStream rng_;
};

// Sampler + assembler: the training batch of each step.
class TrainBatcher {
 public:
  TrainBatcher(const Panel& panel, const WindowConfig& cfg, uint64_t seed);
  const WindowBatch& next();
  Index n_valid() const { return sampler_.n_valid(); }
  WindowAssembler& assembler() { return assembler_; }

 private:
  Index end_;
  WindowSampler sampler_;
  WindowAssembler assembler_;
};

}  // namespace shoal::data
