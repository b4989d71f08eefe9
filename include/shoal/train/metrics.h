// Point-forecast accuracy metrics and the naive baselines, with the M3/M4 conventions.
// For one series with actuals y[1..h], forecasts ŷ[1..h] and training values x[1..n]:
//   MAE   = (1/h) Σ |y − ŷ|
//   sMAPE = (1/h) Σ 200·|y − ŷ| / (|y| + |ŷ|), percent in [0, 200]; a term with
//           y = ŷ = 0 counts 0
//   MASE  = MAE / ((1/(n−m)) Σ_{t=m+1..n} |x_t − x_{t−m}|)   (seasonal-naive in-sample MAE;
//           m falls back to 1 when n ≤ m; not finite when that scale is 0)
// Over many series the scores are averaged series by series (equal h: the mean over all
// forecasts for MAE and sMAPE).
#pragma once

#include <span>
#include <string>

#include "shoal/core/tensor.h"

namespace shoal::data {
struct SeriesSet;
}

namespace shoal::train {

double mae(std::span<const double> y, std::span<const double> y_hat);
double smape(std::span<const double> y, std::span<const double> y_hat);
// The MASE denominator of a training series for seasonality m.
double mase_scale(std::span<const double> insample, Index m);
double mase(std::span<const double> y, std::span<const double> y_hat,
            std::span<const double> insample, Index m);

// ŷ_{n+k} = x_{n−m+1+((k−1) mod m)}: the last season repeated (the last value when m = 1 or the
// series is shorter than m).
void seasonal_naive(std::span<const double> insample, Index m, std::span<double> out);
// ŷ_{n+k} = x_n.
void naive(std::span<const double> insample, std::span<double> out);

// Running means over series; MASE skips series whose scale is 0 (counted in mase_skipped).
struct ScoreAccumulator {
  double mae_sum = 0, smape_sum = 0, mase_sum = 0;
  Index n = 0, n_mase = 0, mase_skipped = 0;

  void add(std::span<const double> y, std::span<const double> y_hat,
           std::span<const double> insample, Index m);
  double mae() const { return n > 0 ? mae_sum / double(n) : 0.0; }
  double smape() const { return n > 0 ? smape_sum / double(n) : 0.0; }
  double mase() const { return n_mase > 0 ? mase_sum / double(n_mase) : 0.0; }
};

// The h held-out actuals of series s of `set`: the rows of `test` with the same id, from the step
// after the series' last ds. Throws shoal::Error naming `test_path` when they are missing, short
// or start elsewhere.
std::span<const double> held_out(const data::SeriesSet& set, Index s, const data::SeriesSet& test,
                                 const std::string& test_path, Index h);

}  // namespace shoal::train
