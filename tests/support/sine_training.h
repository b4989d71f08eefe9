// Training a forecasting model on windows of a noisy sine with ForecastTrainer: one recipe for
// the models whose tests check that training learns (the loss falls).
#pragma once

#include <cmath>
#include <vector>

#include "shoal/core/rng.h"
#include "shoal/models/forecast.h"
#include "shoal/train/forecast_trainer.h"

namespace shoal::testing {

// The losses of 120 steps of 16 windows (lr 3e-3) of sin(0.3 t) plus 5% noise, on `model`
// (a univariate model over float, planned here).
template <class Model>
std::vector<double> train_sine(Model& model) {
  const Index B = 16, L = model.config().input_size, H = model.horizon();
  train::ForecastTrainer<Model, float> trainer(model,
                                               {.max_batch = B, .seed = 3, .adam = {.lr = 3e-3}});
  std::vector<float> series(400);
  RngStream noise(5, 0);
  for (size_t t = 0; t < series.size(); ++t)
    series[t] = static_cast<float>(std::sin(0.3 * double(t)) + 0.05 * noise.uniform(-1.f, 1.f));
  std::vector<float> ins(static_cast<size_t>(B * L)), tgt(static_cast<size_t>(B * H));
  std::vector<double> losses;
  for (Index s = 0; s < 120; ++s) {
    for (Index w = 0; w < B; ++w) {
      const Index st = (s * 37 + w * 11) % (400 - L - H);
      for (Index t = 0; t < L; ++t) ins[size_t(w * L + t)] = series[size_t(st + t)];
      for (Index t = 0; t < H; ++t) tgt[size_t(w * H + t)] = series[size_t(st + L + t)];
    }
    const models::ForecastInputs<float> in{.batch = B, .insample_y = ins.data()};
    losses.push_back(trainer.train_step(in, ConstMat<float>(tgt.data(), B * H, 1)));
  }
  return losses;
}

// Whether the last 10 steps' mean loss is under `fraction` of the first 10 steps'.
inline ::testing::AssertionResult loss_fell(const std::vector<double>& losses, double fraction) {
  double first = 0, last = 0;
  for (size_t i = 0; i < 10; ++i) {
    first += losses[i];
    last += losses[losses.size() - 1 - i];
  }
  if (last < fraction * first) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "first 10 steps " << first / 10 << ", last 10 " << last / 10;
}

}  // namespace shoal::testing
