// The lane-fused MLP trainer against separate one-thread MlpTrainer fits: same data, seeds,
// batches and epochs must give the same weights (to float tolerance) and metrics.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "shoal/core/rng.h"
#include "shoal/train/lanes_mlp_trainer.h"
#include "shoal/train/mlp_trainer.h"
#include "support/alloc_counter.h"

namespace shoal::train {
namespace lanes_mlp_trainer_test {

struct Table {
  std::vector<double> x, y;
};

// A noisy nonlinear target of `in` features; each fit gets its own table.
Table make_table(Index rows, Index in, uint64_t seed) {
  RngStream rng(seed, 99);
  Table t;
  for (Index r = 0; r < rows; ++r) {
    double s = 0;
    for (Index c = 0; c < in; ++c) {
      const double v = 3.0 * rng.uniform() - 1.0;
      t.x.push_back(v);
      s += (c % 2 ? -1.0 : 1.0) * v * v + 0.5 * v;
    }
    t.y.push_back(10.0 + 2.0 * s + 0.1 * rng.normal());
  }
  return t;
}

// Fused fits against one-thread MlpTrainer fits of the same data and seeds; with lr_sweep the
// fits also differ by learning rate (Adam per lane).
void expect_same_as_separate_fits(bool lr_sweep) {
  const Index rows = 70, in = 3;  // 70 rows with batch 16: a short last batch each epoch
  const models::Mlp<float>::Config model{.in = in, .hidden = {5, 4}, .out = 1};
  const MlpTrainConfig cfg{.batch_size = 16, .lr = 1e-2, .threads = 1, .pinning = Pinning::kNone};
  const int fits = 5, epochs = 10;  // 5 of 8 lanes: the unused ones train zero models
  std::vector<Table> tables;
  std::vector<LaneData> lanes;
  for (int f = 0; f < fits; ++f) tables.push_back(make_table(rows, in, 10 + f));
  for (int f = 0; f < fits; ++f)
    lanes.push_back({ConstMat<double>(tables[f].x.data(), rows, in),
                     ConstMat<double>(tables[f].y.data(), rows, 1), static_cast<uint64_t>(f + 1),
                     lr_sweep ? 0.004 * (f + 1) : -1.0});
  LanesMlpTrainer fused(model, cfg, lanes);
  std::vector<double> fused_loss;
  for (int e = 0; e < epochs; ++e) fused_loss = fused.train_epoch();
  EXPECT_EQ(fused.steps(), epochs * 5);

  for (int f = 0; f < fits; ++f) {
    MlpTrainConfig c = cfg;
    c.seed = static_cast<uint64_t>(f + 1);
    if (lr_sweep) c.lr = lanes[f].lr;
    MlpTrainer one(model, c, lanes[f].x, lanes[f].y);
    double loss = 0;
    for (int e = 0; e < epochs; ++e) loss = one.train_epoch().train_loss;
    EXPECT_NEAR(fused_loss[f], loss, 1e-4 * (1 + loss)) << "fit " << f;
    int compared = 0;
    one.model().for_each_param([&](const std::string& name, Param<float>& p) {
      const TensorView<float> lanes_view = fused.arena().find<float>(name);
      ASSERT_EQ(lanes_view.numel(), p.value.numel() * kernels::kLanes) << name;
      for (Index e = 0; e < p.value.numel(); ++e) {
        const float want = p.value.data[e];
        const float got = lanes_view.data[e * kernels::kLanes + f];
        ASSERT_NEAR(got, want, 1e-4f + 1e-3f * std::abs(want)) << name << "[" << e << "] fit " << f;
      }
      ++compared;
    });
    EXPECT_EQ(compared, 6);
    const RegressionMetrics m_one = one.evaluate(lanes[f].x, lanes[f].y);
    const RegressionMetrics m_fused = fused.evaluate(f, lanes[f].x, lanes[f].y);
    EXPECT_NEAR(m_fused.mse, m_one.mse, 1e-3 * (1 + m_one.mse)) << f;
    EXPECT_NEAR(m_fused.r2, m_one.r2, 1e-3) << f;
    // The model learnt something (the comparison is not between two untrained models).
    EXPECT_GT(m_one.r2, 0.2) << f;

    // copy_lane_to gives a per-model Mlp with the same parameters.
    models::Mlp<float> copy(model);
    Planner planner;
    copy.plan(planner, 1);
    Arena arena(std::move(planner));
    fused.model().copy_lane_to(f, copy);
    one.model().for_each_param([&](const std::string& name, Param<float>& p) {
      const TensorView<float> c_view = arena.find<float>(name);
      for (Index e = 0; e < p.value.numel(); ++e)
        ASSERT_NEAR(c_view.data[e], p.value.data[e], 1e-4f + 1e-3f * std::abs(p.value.data[e]));
    });
  }
}

TEST(LanesMlpTrainer, SameWeightsAsSeparateFits) {
  expect_same_as_separate_fits(false);
}

TEST(LanesMlpTrainer, PerLaneLearningRatesMatchSeparateFits) {
  expect_same_as_separate_fits(true);
}

TEST(LanesMlpTrainer, NoHeapAllocationInTrainingEpochs) {
  const Table t = make_table(100, 3, 4), u = make_table(100, 3, 5);
  const models::Mlp<float>::Config model{.in = 3, .hidden = {4, 4}, .out = 1};
  LanesMlpTrainer fused(
      model, {.batch_size = 16, .threads = 1},
      {{ConstMat<double>(t.x.data(), 100, 3), ConstMat<double>(t.y.data(), 100, 1), 1},
       {ConstMat<double>(u.x.data(), 100, 3), ConstMat<double>(u.y.data(), 100, 1), 2}});
  fused.train_epoch();
  testing::AllocCounter counter;
  fused.train_epoch();
  fused.train_epoch();
  EXPECT_EQ(counter.count(), 0);
}

TEST(LanesMlpTrainer, RejectsWhatLockstepCannotDo) {
  const Table t = make_table(10, 2, 1), u = make_table(12, 2, 2);
  const models::Mlp<float>::Config model{.in = 2, .hidden = {3}, .out = 1};
  const MlpTrainConfig cfg{.batch_size = 4, .threads = 1};
  const LaneData a{ConstMat<double>(t.x.data(), 10, 2), ConstMat<double>(t.y.data(), 10, 1), 1};
  const LaneData b{ConstMat<double>(u.x.data(), 12, 2), ConstMat<double>(u.y.data(), 12, 1), 2};
  EXPECT_THROW(LanesMlpTrainer(model, cfg, {a, b}), Error);  // row counts differ
  EXPECT_THROW(LanesMlpTrainer(model, cfg, std::vector<LaneData>(9, a)), Error);  // > 8 fits
  EXPECT_THROW(LanesMlpTrainer(model, cfg, {}), Error);
  auto gelu = model;
  gelu.act = kernels::Act::kGelu;
  EXPECT_THROW(LanesMlpTrainer(gelu, cfg, {a}), Error);
  EXPECT_NO_THROW(LanesMlpTrainer(model, cfg, {a, a}));
}

TEST(LanesMlpTrainer, WinsOnlyBelowTheCrossover) {
  EXPECT_TRUE(lanes_mlp_wins({.in = 4, .hidden = {4, 4}, .out = 1}, 512));
  EXPECT_TRUE(lanes_mlp_wins({.in = 8, .hidden = {16, 16}, .out = 1}, 256));
  EXPECT_FALSE(lanes_mlp_wins({.in = 8, .hidden = {16, 16}, .out = 1}, 512));
  EXPECT_TRUE(lanes_mlp_wins({.in = 32, .hidden = {32}, .out = 1}, 32));
  EXPECT_FALSE(lanes_mlp_wins({.in = 32, .hidden = {32}, .out = 1}, 64));
  EXPECT_TRUE(lanes_mlp_wins({.in = 4, .hidden = {64, 64}, .out = 1}, 32));
  EXPECT_FALSE(lanes_mlp_wins({.in = 4, .hidden = {64, 64}, .out = 1}, 64));  // fleet's default
  EXPECT_FALSE(lanes_mlp_wins({.in = 85, .hidden = {4}, .out = 1}, 8));
  EXPECT_FALSE(lanes_mlp_wins({.in = 4, .hidden = {4}, .out = 1, .act = kernels::Act::kGelu}, 32));
}

}  // namespace lanes_mlp_trainer_test
}  // namespace shoal::train
