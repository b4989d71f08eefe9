// What a windowed forecasting model (TSMixer, TSMixerx) consumes and produces, its shape, and
// the options the mixers share. The training step around such a model is
// train/forecast_trainer.h.
//
// Layouts (neuralforecast's windows_batch, all contiguous row-major, already scaled):
//   insample_y [B, L, N]        hist_exog [B, X, L, N]        futr_exog [B, F, L + H, N]
//   stat_exog  [N, S]           output    [B, H, N·M]
// Legend: B windows, L input_size, H horizon, N series, X/F/S exogenous counts, M outputs per
// forecast value (1 for a point loss; a multi-output loss's count: MQLoss's quantiles,
// DistributionLoss's parameters). With M > 1 the output is what neuralforecast's model returns
// for a loss with outputsize_multiplier M, in its layout (each model's own reshapes), which the
// loss reads (layers/multi_output_losses.h).
#pragma once

#include <cstdint>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/options.h"
#include "shoal/core/rng.h"

namespace shoal::models {

template <class T>
struct ForecastInputs {
  Index batch = 0;                // B ≤ the planned max batch
  const T* insample_y = nullptr;  // [B, L, N]
  const T* hist_exog = nullptr;   // [B, X, L, N], null when X = 0
  const T* futr_exog = nullptr;   // [B, F, L + H, N], null when F = 0
  const T* stat_exog = nullptr;   // [N, S], null when S = 0
  // [B, L, N] 1 where the window's input is data, 0 where it is padding (a series shorter than
  // the window, start padding); null: all data. NBEATS and NHITS mask their residuals with it.
  const T* insample_mask = nullptr;
  // [B, H, N] the window's targets, scaled as insample_y: a recurrent model trained step by step
  // reads its targets before the last as inputs (teacher forcing). Null at inference.
  const T* outsample_y = nullptr;
  // 0: stat_exog is [N, S], shared by every window. > 0: one row per window, [B, S] with this
  // row stride (a univariate model trained over many series: each window's own series' row).
  Index stat_window_stride = 0;
  // When these B windows are a chunk of a larger batch: the index of the first one in it. Dropout
  // masks are drawn per element of the whole batch, so a chunked step draws the same masks. The
  // chunks of a batch run in order from first_window = 0, with the same weights: a model may
  // prepare per-batch work in the first chunk (TSMixerx packs its transposed weights there).
  Index first_window = 0;

  // Windows [b0, b0 + count) of this batch (L input_size, H horizon, N series, X/F exog).
  ForecastInputs windows(Index b0, Index count, Index l, Index h, Index n, Index x, Index f) const {
    ForecastInputs r = *this;
    r.batch = count;
    r.first_window = first_window + b0;
    r.insample_y = insample_y + b0 * l * n;
    if (insample_mask != nullptr) r.insample_mask = insample_mask + b0 * l * n;
    if (outsample_y != nullptr) r.outsample_y = outsample_y + b0 * h * n;
    if (hist_exog != nullptr) r.hist_exog = hist_exog + b0 * x * l * n;
    if (futr_exog != nullptr) r.futr_exog = futr_exog + b0 * f * (l + h) * n;
    if (stat_exog != nullptr && stat_window_stride > 0)
      r.stat_exog = stat_exog + b0 * stat_window_stride;
    return r;
  }
};

// A windowed model's shape, fixed by the data and the job rather than by the user's options.
struct WindowShape {
  Index h = 0;
  Index input_size = 0;
  Index n_series = 1;   // N: series modelled jointly (1: a univariate model's window)
  Index hist_exog = 0;  // X
  Index futr_exog = 0;  // F
  Index stat_exog = 0;  // S
  Index outputs = 1;    // M
  // The trainer needs ∂L/∂exog (exog_grads()): categorical exogenous features reach the model
  // through embeddings the trainer learns (layers/categorical_embeddings.h). Off, a model spends
  // nothing on its exogenous inputs' gradients.
  bool exog_grads = false;
};

// ∂L/∂(a model's exogenous inputs) of its last backward, laid out as ForecastInputs' inputs
// for its `batch` windows: hist [B, X, L, N], futr [B, F, L + H, N]; stat [N, S] summed over
// the windows when stat_window_stride is 0, else [B, S] (each window's own row). Null where the
// model has no such input. Written (=, not +=) by a backward of a model built with
// WindowShape::exog_grads; valid until its next backward.
template <class T>
struct ExogGrads {
  const T* hist = nullptr;
  const T* futr = nullptr;
  const T* stat = nullptr;
};

// The Philox stream that initialisation draws from (dropout layers use small stream ids); a
// Generator::kTorchCpu init ignores it.
inline constexpr uint64_t kInitStream = 0x7153'0000;

}  // namespace shoal::models
