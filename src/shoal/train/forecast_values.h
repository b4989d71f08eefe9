// From a model's raw outputs to what a forecast reports and what validation scores, for every
// loss kind (neuralforecast's predict_step and _compute_valid_loss). Private to the fit paths
// (windowed_fit.h, global_fit.h).
//
// A model's output for a batch is [B·H, N·M] in the scaled space (M: the loss's outputs per
// value, layers/forecast_loss.h). A forecast reports C = forecast_values(loss) values per
// (window, step, series), in the data's scale, laid out [B, H, N, C]:
//   point loss        C = 1: the output, inverse-scaled
//   MQLoss            C = Q: each quantile's output, inverse-scaled
//   DistributionLoss  C = 1 + Q (+ M): the mean and the Q quantiles of num_samples draws from
//   and GMM           the distribution its outputs map to (with the window's loc and scale),
//                     then with return_params the mapped parameters (neuralforecast's order:
//                     GMM's μ_1, σ_1 (, w_1), μ_2, ...)
#pragma once

#include <cstdint>
#include <vector>

#include "shoal/data/windows.h"
#include "shoal/layers/forecast_loss.h"
#include "shoal/train/forecast_job.h"

namespace shoal::train::detail {

class ForecastValues {
 public:
  // Buffers for batches of up to `max_rows` = B·H rows of N series.
  ForecastValues(const layers::LossConfig& loss, data::ScalerType scaler, uint64_t seed,
                 Index max_rows, Index n);
  Index values() const { return c_; }
  // out [B·H, N·M] for batch b → dst [B, H, N, C]. `draw`: the index of the batch's first window
  // among the predict's, so each window has its own draws, reproducible whatever the batching.
  void map(ConstMat<float> out, const data::WindowBatch& b, uint64_t draw, float* dst);

 private:
  layers::LossConfig loss_;
  data::ScalerType scaler_;
  uint64_t seed_;
  Index n_, c_;
  std::vector<float> params_, mean_, quants_;
};

// The validation loss of one batch (raw space, neuralforecast's _compute_valid_loss): the
// training loss's outputs scored by valid_loss (the training loss when unset).
//   point training loss: forecasts scored by a point valid_loss (MASE's scale from the raw
//     insample y);
//   MQLoss: its quantile forecasts scored by a valid MQLoss with as many quantiles;
//   DistributionLoss: its likelihood of the raw target (a distribution valid_loss is always the
//     training loss, as there), or a point valid_loss on the distribution's mean.
// The pair is checked beforehand (check_loss_pair, from check_forecast_job).
class ValidationScorer {
 public:
  ValidationScorer(const TrainConfig& train, data::ScalerType scaler, Index max_windows, Index h,
                   Index n, Index input_size);
  double score(ConstMat<float> out, const data::WindowBatch& b);

 private:
  layers::LossConfig train_loss_;
  data::ScalerType scaler_;
  Index h_, n_;
  layers::ForecastLoss<float> valid_;
  layers::DistributionNll<float> mean_;  // a distribution training loss's mean
  std::vector<float> values_, raw_insample_;
};

// Throws shoal::Error when `train`'s valid_loss cannot score its loss's outputs (neuralforecast
// refuses the same pairs).
void check_loss_pair(const TrainConfig& train);

}  // namespace shoal::train::detail
