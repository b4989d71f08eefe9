// The profiler zones of NHITS, NBEATS, NBEATSx and TiDE: every block records calls on both
// passes with the analytic FLOPs of its layers, through ForecastTrainer::set_profiler.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "shoal/models/nbeats.h"
#include "shoal/models/nbeatsx.h"
#include "shoal/models/nhits.h"
#include "shoal/models/tide.h"
#include "shoal/profile/report.h"
#include "shoal/train/forecast_trainer.h"

namespace shoal {
namespace blocks_models_profile_test {

using models::ForecastInputs;

// Trains 3 steps with a profiler; returns the forward/backward zones with their FLOPs per call.
template <class M>
std::vector<profile::ZoneRow> profiled_zones(typename M::Config cfg, Index x = 0, Index f = 0,
                                             Index s = 0) {
  M model(cfg);
  const Index B = 8, L = cfg.input_size, H = cfg.h;
  train::ForecastTrainer<M, float> trainer(model, {.max_batch = B, .seed = 1});
  profile::RecorderConfig rc;
  rc.max_threads = 4;
  profile::Recorder rec(rc);
  trainer.set_profiler(&rec);
  std::vector<float> y(size_t(B * L), 0.5f), hist(size_t(B * x * L), 0.1f),
      futr(size_t(B * f * (L + H)), 0.2f), stat(size_t(s), 0.3f), tgt(size_t(B * H), 0.4f);
  const ForecastInputs<float> in{.batch = B,
                                 .insample_y = y.data(),
                                 .hist_exog = x > 0 ? hist.data() : nullptr,
                                 .futr_exog = f > 0 ? futr.data() : nullptr,
                                 .stat_exog = s > 0 ? stat.data() : nullptr};
  rec.start();
  for (int step = 0; step < 3; ++step)
    trainer.train_step(in, ConstMat<float>(tgt.data(), B * H, 1));
  rec.stop();
  std::vector<profile::ZoneRow> rows;
  for (const auto& row : profile::summarize(rec, {}).zones)
    if (row.category == profile::Category::kForward || row.category == profile::Category::kBackward)
      rows.push_back(row);
  return rows;
}

void expect_zones(const std::vector<profile::ZoneRow>& rows,
                  const std::vector<std::string>& layers) {
  std::set<std::string> seen;
  for (const auto& row : rows) {
    seen.insert(row.name);
    EXPECT_GT(row.calls, 0u) << row.name;
    EXPECT_GT(row.cost.flops, 0.0) << row.name;
    EXPECT_TRUE(std::isfinite(row.cost.bytes) && row.cost.bytes > 0) << row.name;
  }
  for (const auto& layer : layers)
    for (const char* pass : {".forward", ".backward"})
      EXPECT_TRUE(seen.count(layer + pass)) << layer << pass;
}

TEST(BlocksModelsProfile, EveryBlockIsAZoneWithItsCost) {
  models::NHITS<float>::Config nh;
  nh.h = 4;
  nh.input_size = 8;
  nh.mlp_units = {8, 8};
  expect_zones(profiled_zones<models::NHITS<float>>(nh), {"blocks.0", "blocks.1", "blocks.2"});
  models::NBEATS<float>::Config nb;
  nb.h = 4;
  nb.input_size = 8;
  nb.mlp_units = {8, 8};
  expect_zones(profiled_zones<models::NBEATS<float>>(nb), {"blocks.0", "blocks.1", "blocks.2"});
  models::NBEATSx<float>::Config nx;
  nx.h = 4;
  nx.input_size = 8;
  nx.mlp_units = {8, 8};
  nx.hist_exog = 1;
  nx.futr_exog = 2;
  nx.stat_exog = 1;
  nx.stack_types = {"exogenous", "trend"};
  nx.n_blocks = {1, 1};
  expect_zones(profiled_zones<models::NBEATSx<float>>(nx, 1, 2, 1), {"blocks.0", "blocks.1"});
  models::TiDE<float>::Config td;
  td.h = 4;
  td.input_size = 8;
  td.hidden_size = 8;
  td.decoder_output_dim = 2;
  td.temporal_decoder_dim = 4;
  td.layernorm = false;
  expect_zones(profiled_zones<models::TiDE<float>>(td),
               {"dense_encoder", "dense_decoder", "temporal_decoder", "global_skip"});
  // With layernorm (the default) the temporal decoder's output is its LayerNorm's bias: the
  // dense layers are not run, and the decoder's forward writes that bias (no FLOPs).
  td.layernorm = true;
  std::set<std::string> names;
  for (const auto& row : profiled_zones<models::TiDE<float>>(td)) {
    names.insert(row.name);
    EXPECT_GT(row.calls, 0u) << row.name;
    if (row.name != "temporal_decoder.forward") {
      EXPECT_GT(row.cost.flops, 0.0) << row.name;
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"loss.forward", "loss.backward", "global_skip.forward",
                                          "global_skip.backward", "temporal_decoder.forward",
                                          "temporal_decoder.backward"}));
}

}  // namespace blocks_models_profile_test
}  // namespace shoal
