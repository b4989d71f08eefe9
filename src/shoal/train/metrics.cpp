#include "shoal/train/metrics.h"

#include <cmath>

#include <fmt/format.h>

#include "shoal/core/error.h"
#include "shoal/data/timeseries.h"

namespace shoal::train {
namespace {

void check_same(std::span<const double> y, std::span<const double> y_hat) {
  SHOAL_CHECK(y.size() == y_hat.size() && !y.empty(),
              "metric needs equal, non-empty actuals and forecasts (got {} and {})", y.size(),
              y_hat.size());
}

}  // namespace

double mae(std::span<const double> y, std::span<const double> y_hat) {
  check_same(y, y_hat);
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += std::fabs(y[i] - y_hat[i]);
  return s / double(y.size());
}

double smape(std::span<const double> y, std::span<const double> y_hat) {
  check_same(y, y_hat);
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double den = std::fabs(y[i]) + std::fabs(y_hat[i]);
    if (den > 0) s += 200.0 * std::fabs(y[i] - y_hat[i]) / den;
  }
  return s / double(y.size());
}

double mase_scale(std::span<const double> insample, Index m) {
  SHOAL_CHECK(insample.size() >= 2, "MASE needs at least 2 training values, got {}",
              insample.size());
  SHOAL_CHECK(m >= 1, "seasonality must be ≥ 1, got {}", m);
  auto lag = static_cast<size_t>(m);
  if (insample.size() <= lag) lag = 1;
  double s = 0;
  for (size_t t = lag; t < insample.size(); ++t) s += std::fabs(insample[t] - insample[t - lag]);
  return s / double(insample.size() - lag);
}

double mase(std::span<const double> y, std::span<const double> y_hat,
            std::span<const double> insample, Index m) {
  return mae(y, y_hat) / mase_scale(insample, m);
}

void seasonal_naive(std::span<const double> insample, Index m, std::span<double> out) {
  SHOAL_CHECK(!insample.empty(), "seasonal naive needs at least one training value");
  SHOAL_CHECK(m >= 1, "seasonality must be ≥ 1, got {}", m);
  const size_t n = insample.size();
  const size_t lag = n < static_cast<size_t>(m) ? 1 : static_cast<size_t>(m);
  for (size_t k = 0; k < out.size(); ++k) out[k] = insample[n - lag + k % lag];
}

void naive(std::span<const double> insample, std::span<double> out) {
  seasonal_naive(insample, 1, out);
}

void ScoreAccumulator::add(std::span<const double> y, std::span<const double> y_hat,
                           std::span<const double> insample, Index m) {
  mae_sum += train::mae(y, y_hat);
  smape_sum += train::smape(y, y_hat);
  ++n;
  const double scale = mase_scale(insample, m);
  if (scale > 0 && std::isfinite(scale)) {
    mase_sum += train::mae(y, y_hat) / scale;
    ++n_mase;
  } else {
    ++mase_skipped;
  }
}

std::span<const double> held_out(const data::SeriesSet& set, Index s, const data::SeriesSet& test,
                                 const std::string& test_path, Index h) {
  const std::string& id = set.ids[size_t(s)];
  const Index t = test.find(id);
  const int64_t first = data::advance(set.ds_of(s).back(), set.freq[size_t(s)]);
  if (t < 0 || test.length(t) < h || test.ds_of(t)[0] != first)
    throw Error(
        fmt::format("test data lacks the {} rows after the end of series '{}'", h, id),
        ErrorContext{.file = test_path,
                     .field = "ds",
                     .expected = fmt::format("{} rows from ds {}", h,
                                             data::format_ds(first, set.time_kind, set.date_only)),
                     .actual = t < 0 ? "no rows for this id"
                                     : fmt::format("{} rows from ds {}", test.length(t),
                                                   data::format_ds(test.ds_of(t)[0], test.time_kind,
                                                                   test.date_only))});
  return test.y_of(t).first(size_t(h));
}

}  // namespace shoal::train
