// A jobs file's tune line: each job searches its panel's configurations (train/search.h) and
// refits the best; its forecasts are those of a plain line of that configuration.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "shoal/core/error.h"
#include "shoal/fleet/jobs.h"

namespace shoal::fleet {
namespace tune_jobs_test {

namespace fs = std::filesystem;

class TuneLines : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("shoal_tune_jobs_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::ofstream out(dir_ / "series.csv");
    out << "unique_id,ds,y\n";
    for (const char* id : {"A", "B"})
      for (int t = 1; t <= 60; ++t)
        out << id << "," << t << "," << 10 + (t % 6) * (id[0] == 'A' ? 1 : 2) + 0.1 * t << "\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  BuiltJobs build(const std::string& text) const {
    return build_jobs(parse_jobs(text, "jobs.jsonl", dir_.string()));
  }
  fs::path dir_;
};

// The y_hat column of a job's rows.
std::vector<double> forecasts_of(const std::string& rows) {
  std::vector<double> out;
  size_t start = 0;
  while (start < rows.size()) {
    const size_t end = rows.find('\n', start);
    out.push_back(std::stod(rows.substr(rows.rfind(',', end) + 1, end - rows.rfind(',', end))));
    start = end + 1;
  }
  return out;
}

TEST_F(TuneLines, EachSeriesIsSearchedAndItsBestConfigurationRefitted) {
  const BuiltJobs built =
      build(R"({"id": "t", "data": "series.csv", "model": "mlp", "series": "each", "seed": 3, )"
            R"("config": {"h": 6, "max_steps": 20, "val_check_steps": 10, "hidden_size": 8}, )"
            R"("tune": {"samples": 3, "val_size": 6}})"
            "\n");
  ASSERT_EQ(built.jobs.size(), 2u);
  EXPECT_EQ(built.jobs[0].id, "t/A");
  const JobOutput a = built.jobs[0].run();
  const nlohmann::json& search = a.metrics.at("search");
  EXPECT_EQ(search.at("trials"), 3);
  EXPECT_EQ(search.at("failed"), 0);
  EXPECT_TRUE(std::isfinite(search.at("best_val_loss").get<double>()));
  nlohmann::json best = search.at("best_config");
  EXPECT_FALSE(best.contains("hidden_size"));  // fixed by the line, not searched
  // The refit is a plain line of the best configuration (its drawn seed as the line's seed).
  nlohmann::json config = {
      {"h", 6}, {"max_steps", 20}, {"val_check_steps", 10}, {"hidden_size", 8}};
  const uint64_t seed = best.at("random_seed").get<uint64_t>();
  best.erase("random_seed");
  config.update(best);
  const nlohmann::json plain = {{"id", "t"},        {"data", "series.csv"}, {"model", "mlp"},
                                {"series", "each"}, {"seed", seed},         {"config", config}};
  const JobOutput refit = build(plain.dump() + "\n").jobs[0].run();
  EXPECT_EQ(forecasts_of(a.rows), forecasts_of(refit.rows));
  EXPECT_EQ(forecasts_of(a.rows).size(), 6u);
  // Another series draws its own configurations (its label seeds them).
  const JobOutput b = built.jobs[1].run();
  EXPECT_EQ(b.metrics.at("search").at("trials"), 3);
}

TEST_F(TuneLines, AGlobalSearchIsOneJobAndTheSettingsAreInTheKey) {
  const std::string line =
      R"({"id": "g", "data": "series.csv", "model": "nlinear", "series": "all", )"
      R"("config": {"h": 6, "max_steps": 10, "val_check_steps": 5}, "tune": {"samples": 2}})";
  const BuiltJobs built = build(line + "\n");
  ASSERT_EQ(built.jobs.size(), 1u);
  const JobOutput g = built.jobs[0].run();
  EXPECT_EQ(g.metrics.at("search").at("trials"), 2);
  EXPECT_EQ(forecasts_of(g.rows).size(), 12u);  // both series
  std::string more = line;
  more.replace(more.find("\"samples\": 2"), 12, "\"samples\": 3");
  EXPECT_NE(build(more + "\n").jobs[0].key, built.jobs[0].key);
}

TEST_F(TuneLines, BadSettingsFailTheirLineNamingWhatIsAllowed) {
  const BuiltJobs built = build(
      R"({"id": "a", "data": "series.csv", "model": "mlp", "config": {"h": 6}, "tune": {"sample": 3}})"
      "\n"
      R"({"id": "b", "data": "series.csv", "model": "naive", "config": {"h": 6}, "tune": {}})"
      "\n"
      R"({"id": "c", "data": "series.csv", "model": "mlp", "config": {"h": 6, "val_size": 6}, "tune": {}})"
      "\n"
      R"({"id": "d", "data": "series.csv", "model": "mlp", "config": {"h": 6}, "tune": {"prune_factor": 1}})"
      "\n"
      R"({"id": "e", "data": "series.csv", "model": "mlp", "config": {"h": 6}, "tune": 3})"
      "\n");
  const char* want[] = {"unknown tune setting 'sample' (expected samples, val_size",
                        "model 'naive' has no hyper-parameters to search",
                        "not on config 'val_size'", "'prune_factor' must be 0 (off) or ≥ 2",
                        "'tune' must be an object"};
  ASSERT_EQ(built.jobs.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    try {
      built.jobs[i].run();
      ADD_FAILURE() << "line " << i + 1 << " ran";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(want[i]), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(fmt::format("jobs.jsonl:{}:", i + 1)), std::string::npos)
          << e.what();
    }
  }
}

TEST_F(TuneLines, ASearchWhoseEveryTrialFailsNamesTheFirstError) {
  // Windows longer than the series: no trial can train.
  const BuiltJobs built =
      build(R"({"id": "f", "data": "series.csv", "model": "mlp", "series": "each", )"
            R"("config": {"h": 6, "input_size": 100, "max_steps": 3}, "tune": {"samples": 2}})"
            "\n");
  try {
    built.jobs[0].run();
    FAIL() << "a search without a validated trial succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("every one of 2 trials failed; the first: "),
              std::string::npos)
        << e.what();
  }
}

}  // namespace tune_jobs_test
}  // namespace shoal::fleet
