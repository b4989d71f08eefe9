// A neuralforecast TSMixerx fit on a short real series (M3 yearly N0589: 19 observations, h 6,
// input_size 12, so only 7 valid training windows, sampled with replacement), replayed in
// shoal. The golden (bench/peers/m3_trace.py --golden) holds the series, the windows and
// masks the peer cut, its initial weights, the windows it sampled and its losses for the first
// steps, and its predict window. shoal must cut the same windows with the same masks, take the
// same predict window, and, from the same weights on the same windows, reproduce the losses:
// the training loop is then neuralforecast's, and forecasts differ only by the random streams
// (init and sampling). docs/accuracy.md ("Yearly") shows the whole 1,000-step replay.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shoal/core/error.h"
#include "shoal/data/timeseries.h"
#include "shoal/data/windows.h"
#include "shoal/models/forecast.h"
#include "shoal/models/tsmixerx.h"
#include "shoal/train/checkpoint.h"
#include "shoal/train/forecast_trainer.h"

namespace shoal::train {
namespace forecast_replay_test {

const std::filesystem::path kGolden =
    std::filesystem::path(SHOAL_GOLDEN_DIR) / "m3_yearly_N0589_replay";

nlohmann::json load_golden() {
  std::ifstream in(kGolden.string() + ".json");
  if (!in) throw Error("cannot open golden " + kGolden.string() + ".json");
  return nlohmann::json::parse(in);
}

data::SeriesSet series_of(const nlohmann::json& g) {
  data::SeriesSet s;
  s.source = "golden";
  s.ids.push_back(g.at("id").get<std::string>());
  s.offsets.push_back(0);
  const auto y = g.at("y").get<std::vector<double>>();
  for (size_t t = 0; t < y.size(); ++t) {
    s.ds.push_back(int64_t(t) + 1);
    s.y.push_back(y[t]);
  }
  s.offsets.push_back(Index(y.size()));
  s.freq.push_back({});
  return s;
}

TEST(ForecastReplay, ShortSeriesWindowsAndMasksMatchNeuralforecast) {
  const nlohmann::json g = load_golden();
  const data::SeriesSet set = series_of(g);
  const data::Panel panel(set, {0}, {});
  const data::WindowConfig wc{.input_size = g.at("input_size").get<Index>(),
                              .h = g.at("h").get<Index>()};
  const Index L = wc.input_size, h = wc.h;
  const auto valid = g.at("valid_starts").get<std::vector<Index>>();
  ASSERT_EQ(data::train_window_starts(panel, wc), valid);
  // The peer cuts T - L + 1 windows of its right-padded span and drops the one whose horizon is
  // all padding; each kept window's mask, insample and horizon, as the peer built it.
  const auto masks = g.at("train_masks").get<std::vector<std::vector<float>>>();
  ASSERT_EQ(Index(masks.size()), panel.length() - L + 1);
  data::WindowAssembler as(panel, wc, Index(valid.size()));
  const auto& b = as.assemble(valid, data::train_end(panel, wc));
  for (size_t i = 0; i < valid.size(); ++i) {
    const auto& m = masks[size_t(valid[i])];
    for (Index t = 0; t < L; ++t)
      EXPECT_EQ(b.insample_mask.data[Index(i) * L + t], m[size_t(t)]) << "window " << i;
    for (Index t = 0; t < h; ++t)
      EXPECT_EQ(b.outsample_mask.data[Index(i) * h + t], m[size_t(L + t)]) << "window " << i;
  }
  // Predict: the last L observations.
  const Index start = data::predict_window_start(panel, wc);
  const auto& p = as.assemble({&start, 1}, panel.length(), true);
  EXPECT_EQ(std::vector<float>(p.insample_y.begin(), p.insample_y.end()),
            g.at("predict_insample").get<std::vector<float>>());
}

TEST(ForecastReplay, SameWeightsAndWindowsGiveNeuralforecastsLosses) {
  const nlohmann::json g = load_golden();
  const data::SeriesSet set = series_of(g);
  const data::Panel panel(set, {0}, {});
  const data::WindowConfig wc{.input_size = g.at("input_size").get<Index>(),
                              .h = g.at("h").get<Index>()};
  models::TSMixerx<float> model(models::TSMixerx<float>::Config::shaped(
      {.h = wc.h, .input_size = wc.input_size, .n_series = 1}));
  train::ForecastTrainer<models::TSMixerx<float>, float> trainer(model, {.max_batch = 32});
  load_checkpoint(trainer.arena(), kGolden.string() + ".safetensors");
  data::WindowAssembler as(panel, wc, 32);
  const Index end = data::train_end(panel, wc);
  const auto losses = g.at("losses").get<std::vector<double>>();
  const auto starts = g.at("sampled_starts").get<std::vector<std::vector<Index>>>();
  ASSERT_EQ(losses.size(), starts.size());
  ASSERT_GE(losses.size(), size_t{50});
  double worst = 0;
  for (size_t k = 0; k < losses.size(); ++k) {
    ASSERT_EQ(starts[k].size(), size_t{32});  // 7 valid windows: 32 drawn with replacement
    const auto& b = as.assemble(starts[k], end);
    const Index rows = b.B * wc.h;
    const double l = trainer.train_step({.batch = b.B, .insample_y = b.insample_y.data},
                                        ConstMat<float>(b.outsample_y.data, rows, 1),
                                        ConstMat<float>(b.outsample_mask.data, rows, 1));
    const double rel = std::abs(l - losses[k]) / std::abs(losses[k]);
    worst = std::max(worst, rel);
    // float32 sums in another order drift slowly; a semantic difference (a window, a mask,
    // the loss's denominator) shows at once.
    EXPECT_LT(rel, 1e-5) << "step " << k << ": shoal " << l << ", neuralforecast " << losses[k];
  }
  std::cout << "[golden] " << losses.size() << "-step loss max rel err " << worst << " (first "
            << losses.front() << ", last " << losses.back() << ")\n";
}

}  // namespace forecast_replay_test
}  // namespace shoal::train
