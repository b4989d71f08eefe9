// Horizontal fusion in the fleet: a seed sweep of a tiny MLP trains its seeds fused across SIMD
// lanes (metric fused_lanes) with the results of separate per-model fits; a wide MLP does not.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "shoal/core/rng.h"
#include "shoal/data/csv.h"
#include "shoal/fleet/fleet.h"
#include "shoal/fleet/jobs.h"
#include "shoal/train/mlp_trainer.h"

namespace shoal::fleet {
namespace lanes_jobs_test {

namespace fs = std::filesystem;

struct TempCsv {
  fs::path path;
  TempCsv() {
    path = fs::temp_directory_path() / ("shoal_lanes_jobs_" + std::to_string(getpid()) + ".csv");
    std::ofstream f(path);
    f << "a,b,c,y\n";
    RngStream rng(5, 1);
    for (int r = 0; r < 90; ++r) {
      const double a = rng.uniform(-1, 1), b = rng.uniform(-1, 1), c = rng.uniform(-1, 1);
      f << a << "," << b << "," << c << "," << 3 * a * a - 2 * b + a * c + 0.05 * rng.normal()
        << "\n";
    }
  }
  ~TempCsv() { fs::remove(path); }
};

// What the per-model job computes for one seed (jobs.cpp's MLP run).
double separate_val_mse(const std::string& path, const models::Mlp<float>::Config& model,
                        uint64_t seed, int epochs, Index batch, double lr = 1e-2) {
  const auto table = data::read_numeric_csv(path);
  std::vector<double> x, y;
  data::shuffled_xy(table, table.column("y"), seed, x, y);
  const Index n_val = static_cast<Index>(static_cast<double>(table.rows) * 0.2);
  const Index n_train = table.rows - n_val;
  train::MlpTrainer t(
      model, {.batch_size = batch, .lr = lr, .seed = seed, .threads = 1, .pinning = Pinning::kNone},
      ConstMat<double>(x.data(), n_train, 3), ConstMat<double>(y.data(), n_train, 1));
  for (int e = 0; e < epochs; ++e) t.train_epoch();
  return t
      .evaluate(ConstMat<double>(x.data() + n_train * 3, n_val, 3),
                ConstMat<double>(y.data() + n_train, n_val, 1))
      .mse;
}

TEST(FleetLanes, TinyMlpSeedSweepTrainsFusedWithSeparateResults) {
  TempCsv csv;
  const auto specs = parse_jobs(
      R"({"id": "tiny", "data": ")" + csv.path.string() +
          R"(", "model": "mlp_regressor", "config": {"hidden": [6, 6], "epochs": 6, "batch_size": 16, "learning_rate": 0.01}, "sweep": {"seed": [1, 2, 3]}})"
          "\n"
          R"({"id": "wide", "data": ")" +
          csv.path.string() +
          R"(", "model": "mlp_regressor", "config": {"hidden": [64], "epochs": 1}, "sweep": {"seed": [1, 2]}})"
          "\n",
      "jobs.jsonl", "/");
  ASSERT_EQ(specs.size(), 5u);
  const BuiltJobs built = build_jobs(specs);
  ASSERT_EQ(built.jobs.size(), 5u);
  ASSERT_TRUE(built.jobs[0].run) << "the line parsed";
  // Run the tiny jobs in reverse: whichever member runs first trains the group.
  for (int j = 2; j >= 0; --j) {
    const JobOutput o = built.jobs[size_t(j)].run();
    ASSERT_TRUE(o.metrics.contains("fused_lanes")) << o.metrics.dump();
    EXPECT_EQ(o.metrics.at("fused_lanes"), 3);
    const double want = separate_val_mse(csv.path.string(), {.in = 3, .hidden = {6, 6}, .out = 1},
                                         static_cast<uint64_t>(j + 1), 6, 16);
    EXPECT_NEAR(o.metrics.at("val_mse").get<double>(), want, 1e-3 * (1 + want)) << j;
  }
  for (int j = 3; j < 5; ++j) {
    const JobOutput o = built.jobs[size_t(j)].run();
    EXPECT_FALSE(o.metrics.contains("fused_lanes")) << "width 64 is above the crossover";
    EXPECT_TRUE(o.metrics.contains("val_mse"));
  }
}

TEST(FleetLanes, LearningRateSweepTrainsFusedWithSeparateResults) {
  TempCsv csv;
  const auto specs = parse_jobs(
      R"({"id": "lr", "data": ")" + csv.path.string() +
          R"(", "model": "mlp_regressor", "config": {"hidden": [5], "epochs": 5, "batch_size": 16}, "sweep": {"learning_rate": [0.003, 0.01, 0.03], "seed": [1, 2]}})"
          "\n",
      "jobs.jsonl", "/");
  const BuiltJobs built = build_jobs(specs);
  ASSERT_EQ(built.jobs.size(), 6u);
  for (size_t j = 0; j < 6; ++j) {
    const JobOutput o = built.jobs[j].run();
    ASSERT_TRUE(o.metrics.contains("fused_lanes")) << o.metrics.dump();
    EXPECT_EQ(o.metrics.at("fused_lanes"), 6);
    const double lr = specs[j].config.at("learning_rate").get<double>();
    const double want = separate_val_mse(csv.path.string(), {.in = 3, .hidden = {5}, .out = 1},
                                         specs[j].seed, 5, 16, lr);
    EXPECT_NEAR(o.metrics.at("val_mse").get<double>(), want, 1e-3 * (1 + want)) << specs[j].id;
  }
}

// Two workers on two groups: a worker whose group is being trained trains the other one; the
// results are those of one worker, bit for bit.
TEST(FleetLanes, TwoWorkersGiveTheResultsOfOne) {
  TempCsv csv;
  const auto specs = parse_jobs(
      R"({"id": "s", "data": ")" + csv.path.string() +
          R"(", "model": "mlp_regressor", "config": {"hidden": [4, 4], "epochs": 3}, "sweep": {"seed": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}})"
          "\n",
      "jobs.jsonl", "/");
  std::vector<std::vector<JobRecord>> runs;
  for (int workers : {1, 2}) {
    const BuiltJobs built = build_jobs(specs);  // fresh groups for each run
    runs.push_back(
        run_fleet(built.jobs, {.workers = workers, .progress = false, .pin = false}, nullptr));
  }
  ASSERT_EQ(runs[0].size(), 12u);
  ASSERT_EQ(runs[1].size(), 12u);
  for (size_t j = 0; j < 12; ++j) {
    ASSERT_TRUE(runs[0][j].ok && runs[1][j].ok) << runs[0][j].error << runs[1][j].error;
    EXPECT_EQ(runs[0][j].output.metrics.at("fused_lanes"), j < 8 ? 8 : 4);
    EXPECT_EQ(runs[0][j].output.metrics.at("val_mse").get<double>(),
              runs[1][j].output.metrics.at("val_mse").get<double>())
        << j;
  }
}

TEST(FleetLanes, ConfigFusionFalseTrainsEachSeedAlone) {
  TempCsv csv;
  const auto specs = parse_jobs(
      R"({"id": "tiny", "data": ")" + csv.path.string() +
          R"(", "model": "mlp_regressor", "config": {"hidden": [4], "epochs": 2, "fusion": false}, "sweep": {"seed": [1, 2]}})"
          "\n",
      "jobs.jsonl", "/");
  const BuiltJobs built = build_jobs(specs);
  ASSERT_EQ(built.jobs.size(), 2u);
  for (const auto& job : built.jobs) {
    const JobOutput o = job.run();
    EXPECT_FALSE(o.metrics.contains("fused_lanes")) << o.metrics.dump();
    EXPECT_TRUE(o.metrics.contains("val_mse")) << o.metrics.dump();
  }
}

}  // namespace lanes_jobs_test
}  // namespace shoal::fleet
