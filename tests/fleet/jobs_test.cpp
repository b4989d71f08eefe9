// Jobs files: JSON lines and CSV, sweeps, bad lines that fail alone, keys that follow settings.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "shoal/core/error.h"
#include "shoal/data/ncf.h"
#include "shoal/data/ncf_sampler.h"
#include "shoal/fleet/jobs.h"
#include "shoal/train/ncf_trainer.h"

namespace shoal::fleet {
namespace jobs_test {

namespace fs = std::filesystem;

TEST(FleetJobs, JsonLinesWithASweepExpandToOneJobPerCombination) {
  const auto specs = parse_jobs(
      "# a comment\n"
      R"({"id": "a", "data": "d.csv", "model": "tsmixerx", "seed": 3, "config": {"h": 6}})"
      "\n\n"
      R"({"id": "s", "data": "/abs/d.csv", "model": "mlp_regressor", "sweep": {"seed": [1, 2], "learning_rate": [0.1, 0.01, 0.001]}})"
      "\n",
      "jobs.jsonl", "/base");
  ASSERT_EQ(specs.size(), 7u);
  EXPECT_EQ(specs[0].id, "a");
  EXPECT_EQ(specs[0].data, "/base/d.csv");  // relative to the jobs file's folder
  EXPECT_EQ(specs[0].seed, 3u);
  EXPECT_EQ(specs[0].config.at("h"), 6);
  EXPECT_EQ(specs[0].line, 2);
  EXPECT_EQ(specs[1].data, "/abs/d.csv");
  EXPECT_EQ(specs[1].group, "s");
  // Axes in key order, the first one varying fastest.
  EXPECT_EQ(specs[1].id, "s[learning_rate=0.1,seed=1]");
  EXPECT_EQ(specs[2].id, "s[learning_rate=0.01,seed=1]");
  EXPECT_EQ(specs[6].id, "s[learning_rate=0.001,seed=2]");
  EXPECT_EQ(specs[6].seed, 2u);
  EXPECT_DOUBLE_EQ(specs[6].config.at("learning_rate").get<double>(), 0.001);
  for (const auto& s : specs) EXPECT_TRUE(s.error.empty()) << s.error;
}

TEST(FleetJobs, CsvColumnsBeyondTheKnownOnesAreConfigOverrides) {
  const auto specs = parse_jobs(
      "id,data,model,seed,h,input_size,scaler_type\n"
      "x,train.csv,tsmixerx,5,18,36,robust\n"
      "y,train.csv,seasonal_naive,,18,,\n",
      "jobs.csv", "");
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].seed, 5u);
  EXPECT_EQ(specs[0].config.at("h"), 18);
  EXPECT_EQ(specs[0].config.at("scaler_type"), "robust");
  EXPECT_EQ(specs[1].seed, 1u);
  EXPECT_FALSE(specs[1].config.contains("input_size"));  // empty cell: default
}

TEST(FleetJobs, ABadLineBecomesAFailedJobWithItsLineAndTheOthersStay) {
  const auto specs = parse_jobs(R"({"data": "a.csv", "model": "mlp"})"
                                "\n"
                                R"({"data": "a.csv", "model": )"
                                "\n"
                                R"({"data": "a.csv", "model": "mlp", "colour": 1})"
                                "\n",
                                "jobs.jsonl", "");
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_TRUE(specs[0].error.empty());
  EXPECT_NE(specs[1].error.find("jobs.jsonl:2"), std::string::npos) << specs[1].error;
  EXPECT_NE(specs[2].error.find("unknown field 'colour'"), std::string::npos) << specs[2].error;
}

// Builds jobs over a tiny series file; returns the built jobs.
BuiltJobs build_from(const std::string& jobs_text, const std::string& dir) {
  return build_jobs(parse_jobs(jobs_text, "jobs.jsonl", dir));
}

TEST(FleetJobs, ForecastLinesRunOneJobPerSeriesAndBadConfigFailsAlone) {
  const fs::path dir = fs::temp_directory_path() / ("shoal_jobs_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "train.csv");
    out << "unique_id,ds,y\n";
    for (const char* id : {"A", "B"})
      for (int t = 1; t <= 30; ++t)
        out << id << "," << t << "," << (t % 4) + (id[0] == 'B') << "\n";
  }
  {
    std::ofstream out(dir / "test.csv");
    out << "unique_id,ds,y\n";
    for (const char* id : {"A", "B"})
      for (int t = 31; t <= 34; ++t)
        out << id << "," << t << "," << (t % 4) + (id[0] == 'B') << "\n";
  }
  const BuiltJobs built = build_from(
      R"({"id": "sn", "data": "train.csv", "test": "test.csv", "model": "seasonal_naive", "config": {"h": 4, "seasonality": 4}})"
      "\n"
      R"({"id": "bad", "data": "train.csv", "model": "tsmixerx", "config": {"h": 4, "input_size": 8, "colour": 2}})"
      "\n"
      R"({"id": "gone", "data": "missing.csv", "model": "naive", "config": {"h": 4}})"
      "\n",
      dir.string());
  ASSERT_EQ(built.jobs.size(), 4u);  // sn/A, sn/B, bad, gone
  EXPECT_EQ(built.jobs[0].id, "sn/A");
  EXPECT_EQ(built.jobs[1].id, "sn/B");
  const JobOutput a = built.jobs[0].run();
  // h rows "job,unique_id,ds,y_hat"; the seasonal naive of a period-4 series is exact.
  EXPECT_EQ(a.rows, "sn/A,A,31,3\nsn/A,A,32,0\nsn/A,A,33,1\nsn/A,A,34,2\n");
  ScoreSums sums;
  sums.add(a.metrics);
  EXPECT_EQ(sums.n, 1);
  EXPECT_DOUBLE_EQ(sums.mae, 0.0);
  EXPECT_DOUBLE_EQ(sums.snaive_mae, 0.0);
  try {
    built.jobs[2].run();
    FAIL() << "an unknown config key was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown config key 'colour'"), std::string::npos);
  }
  EXPECT_THROW(built.jobs[3].run(), Error);
  EXPECT_NE(built.jobs[0].key, built.jobs[1].key);
  // Another seed gives another key: a resumed fleet never mixes the two.
  const BuiltJobs other = build_from(
      R"({"id": "sn", "data": "train.csv", "test": "test.csv", "model": "seasonal_naive", "seed": 2, "config": {"h": 4, "seasonality": 4}})"
      "\n",
      dir.string());
  EXPECT_EQ(other.jobs[0].id, built.jobs[0].id);
  EXPECT_NE(other.jobs[0].key, built.jobs[0].key);
  fs::remove_all(dir);
}

// "mlp" is the registry's forecaster (neuralforecast's MLP); the tabular regressor of `shoal mlp`
// is "mlp_regressor". A regressor's table under "mlp" is read as series and fails naming the
// missing column.
TEST(FleetJobs, MlpIsTheForecasterAndMlpRegressorTheRegressor) {
  const fs::path dir = fs::temp_directory_path() / ("shoal_jobs_mlp_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "series.csv");
    out << "unique_id,ds,y\n";
    for (int t = 1; t <= 40; ++t) out << "A," << t << "," << t % 5 << "\n";
  }
  {
    std::ofstream out(dir / "table.csv");
    out << "x1,x2,y\n";
    for (int r = 0; r < 40; ++r) out << r % 3 << "," << r % 7 << "," << r % 5 << "\n";
  }
  const BuiltJobs built = build_from(
      R"({"id": "f", "data": "series.csv", "model": "mlp", "config": {"h": 3, "input_size": 6, "hidden_size": 8, "max_steps": 2}})"
      "\n"
      R"({"id": "t", "data": "table.csv", "model": "mlp_regressor", "config": {"epochs": 1}})"
      "\n"
      R"({"id": "n", "data": "table.csv", "model": "mlp", "config": {"epochs": 1}})"
      "\n",
      dir.string());
  ASSERT_EQ(built.info.size(), 3u);
  EXPECT_TRUE(built.info[0].forecast);
  EXPECT_FALSE(built.info[1].forecast);
  EXPECT_TRUE(built.info[2].forecast);
  ASSERT_EQ(built.jobs.size(), 3u);
  EXPECT_EQ(built.jobs[0].id, "f/A");
  const JobOutput f = built.jobs[0].run();
  EXPECT_EQ(std::count(f.rows.begin(), f.rows.end(), '\n'), 3) << f.rows;
  const JobOutput t = built.jobs[1].run();
  EXPECT_FALSE(t.metrics.empty());
  try {
    built.jobs[2].run();
    ADD_FAILURE() << "a forecaster ran on a table without series";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing column 'unique_id'"), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

// A univariate model's line fits one model globally over its series unless it says
// "series": "each".
TEST(FleetJobs, UnivariateLinesTrainGloballyByDefault) {
  const fs::path dir = fs::temp_directory_path() / ("shoal_jobs_uni_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "series.csv");
    out << "unique_id,ds,y\n";
    for (const char* id : {"A", "B", "C"})
      for (int t = 1; t <= 40; ++t) out << id << "," << t << "," << t % 5 + (id[0] - 'A') << "\n";
  }
  const BuiltJobs built = build_from(
      R"({"id": "g", "data": "series.csv", "model": "nlinear", "config": {"h": 3, "input_size": 6, "max_steps": 5}})"
      "\n"
      R"({"id": "e", "data": "series.csv", "model": "nlinear", "series": "each", "config": {"h": 3, "input_size": 6, "max_steps": 5}})"
      "\n",
      dir.string());
  ASSERT_EQ(built.jobs.size(), 4u);  // g (all three series), e/A, e/B, e/C
  EXPECT_EQ(built.jobs[1].id, "e/A");
  const JobOutput g = built.jobs[0].run();
  EXPECT_EQ(std::count(g.rows.begin(), g.rows.end(), '\n'), 9) << g.rows;
  fs::remove_all(dir);
}

// A jobs file reaches every loss option: the loss and its parameters, horizon_weight and
// valid_loss change the forecasts (or the key), and a bad value fails its line alone.
TEST(FleetJobs, LossOptionsReachTheFit) {
  const fs::path dir =
      fs::temp_directory_path() / ("shoal_jobs_loss_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "series.csv");
    out << "unique_id,ds,y\n";
    for (const char* id : {"A", "B"})
      for (int t = 1; t <= 40; ++t)
        out << id << "," << t << "," << (t % 5) * (1 + (id[0] - 'A')) + 0.1 * t << "\n";
  }
  const std::string common = R"("data": "series.csv", "model": "nlinear", "config": {"h": 3, )"
                             R"("input_size": 8, "max_steps": 20, "val_size": 3, )";
  const BuiltJobs built = build_from(
      "{\"id\": \"mae\", " + common + R"("loss": "mae"}})" + "\n" + "{\"id\": \"q\", " + common +
          R"("loss": "quantile", "quantile": 0.9}})" + "\n" + "{\"id\": \"hw\", " + common +
          R"("loss": "mae", "horizon_weight": [1, 0, 3]}})" + "\n" + "{\"id\": \"vl\", " + common +
          R"("loss": "mae", "valid_loss": "mase", "valid_loss_seasonality": 5}})" + "\n" +
          "{\"id\": \"bad\", " + common + R"("loss": "quantile", "quantile": 2}})" + "\n",
      dir.string());
  ASSERT_EQ(built.jobs.size(), 5u);
  // The forecasts without the job id that starts each row.
  const auto forecasts = [&](size_t k) {
    std::string rows = built.jobs[k].run().rows, out;
    for (size_t at = 0; at < rows.size();) {
      const size_t end = rows.find('\n', at);
      out += rows.substr(rows.find(',', at), end + 1 - rows.find(',', at));
      at = end + 1;
    }
    return out;
  };
  const std::string mae = forecasts(0);
  EXPECT_NE(forecasts(1), mae);
  EXPECT_NE(forecasts(2), mae);
  EXPECT_EQ(forecasts(3), mae);  // valid_loss scores validation only: the same fit
  EXPECT_NE(built.jobs[3].key, built.jobs[0].key);
  try {
    built.jobs[4].run();
    FAIL() << "q = 2 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("field 'quantile'"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// A job's key follows its data's contents, not the file's name, size or time: data rewritten
// with other values of the same size and time stamp gets another key (a journal of the old data
// is not reused), and the same bytes written again at another time keep the key.
TEST(FleetJobs, KeysFollowTheDataContentsNotTheFileStamp) {
  const fs::path dir = fs::temp_directory_path() / ("shoal_jobkeys_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto write = [&](const std::string& text) {
    std::ofstream(dir / "train.csv") << text;
    fs::last_write_time(dir / "train.csv", fs::file_time_type{});  // one fixed time stamp
  };
  const std::string line =
      R"({"id": "n", "data": "train.csv", "model": "naive", "config": {"h": 2}})"
      "\n";
  write("unique_id,ds,y\nA,1,1\nA,2,2\nA,3,3\n");
  const std::string first = build_from(line, dir.string()).jobs.at(0).key;
  write("unique_id,ds,y\nA,1,7\nA,2,8\nA,3,9\n");  // same size, same time, other values
  const std::string other = build_from(line, dir.string()).jobs.at(0).key;
  EXPECT_NE(other, first);
  write("unique_id,ds,y\nA,1,1\nA,2,2\nA,3,3\n");
  fs::last_write_time(dir / "train.csv", fs::file_time_type::clock::now());
  EXPECT_EQ(build_from(line, dir.string()).jobs.at(0).key, first);
  fs::remove_all(dir);
}

// A TSMixerx line with every kind of exogenous variable: the static table and the future
// values come from the line's 'static' and 'futr_df' files, and each of them changes the
// forecasts (so the jobs pass them to the model, not just read them).
TEST(FleetJobs, ForecastLinesTakeStaticAndFutureExogenousFiles) {
  const fs::path dir = fs::temp_directory_path() / ("shoal_exogjobs_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto write = [&](const char* name, const std::string& text) {
    std::ofstream(dir / name) << text;
  };
  std::string train = "unique_id,ds,y,x_h,x_f\n";
  for (const char* id : {"A", "B"})
    for (int t = 1; t <= 30; ++t)
      train += fmt::format("{},{},{},{},{}\n", id, t, (t % 4) + (id[0] == 'B'), t % 3, t % 5);
  write("train.csv", train);
  const auto futr = [](int scale) {
    std::string f = "unique_id,ds,x_f\n";
    for (const char* id : {"A", "B"})
      for (int t = 31; t <= 34; ++t) f += fmt::format("{},{},{}\n", id, t, scale * (t % 5));
    return f;
  };
  write("futr.csv", futr(1));
  write("futr10.csv", futr(10));
  write("static.csv", "unique_id,size\nA,1\nB,2\n");
  write("static5.csv", "unique_id,size\nA,5\nB,-5\n");
  const auto rows = [&](const std::string& statics, const std::string& future) {
    const BuiltJobs b = build_from(
        fmt::format(
            R"({{"id": "x", "data": "train.csv", "static": "{}", "futr_df": "{}", "model": "tsmixerx", "max_series": 1, "config": {{"h": 4, "input_size": 8, "max_steps": 5, "hist_exog_list": ["x_h"], "futr_exog_list": ["x_f"], "stat_exog_list": ["size"]}}}})",
            statics, future) +
            "\n",
        dir.string());
    EXPECT_EQ(b.jobs.size(), 1u);
    return b.jobs.at(0).run().rows;
  };
  const std::string base = rows("static.csv", "futr.csv");
  EXPECT_EQ(std::count(base.begin(), base.end(), '\n'), 4);
  EXPECT_EQ(base, rows("static.csv", "futr.csv"));  // deterministic
  EXPECT_NE(base, rows("static.csv", "futr10.csv"));
  EXPECT_NE(base, rows("static5.csv", "futr.csv"));
  // Without the files, the line fails and says which field it needs.
  const BuiltJobs missing = build_from(
      R"({"id": "m", "data": "train.csv", "model": "tsmixerx", "config": {"h": 4, "input_size": 8, "stat_exog_list": ["size"]}})"
      "\n",
      dir.string());
  ASSERT_EQ(missing.jobs.size(), 1u);
  try {
    missing.jobs[0].run();
    FAIL() << "stat_exog_list without a static table was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("give the line a 'static' file"), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

TEST(FleetJobs, NcfJobsAreBudgetedWithTheirArenasAndEpochArrays) {
  const fs::path dir = fs::temp_directory_path() / ("shoal_ncfjobs_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "pos.csv");
    out << "user,item,c0\n";
    for (int u = 0; u < 40; ++u)
      for (int k = 0; k < 25; ++k)
        out << u << "," << (u * 7 + k * 3) % 90 << "," << k * 0.1 << "\n";
  }
  const BuiltJobs built = build_from(
      R"({"id": "r", "data": "pos.csv", "model": "ncf", "config": {"epochs": 1, "num_negatives": 4}})"
      "\n",
      dir.string());
  ASSERT_EQ(built.jobs.size(), 1u);
  const size_t planned = built.jobs[0].arena_bytes;
  // At least what a real trainer holds: its arena and the sampler's 5 × 1000 instances.
  const data::NcfPositives pos = data::read_ncf_csv((dir / "pos.csv").string(), {});
  const models::Ncf<float>::Config model{
      .num_users = pos.num_users, .num_items = pos.num_items, .context = pos.context_cols()};
  const train::NcfTrainConfig cfg{.threads = 1, .pinning = Pinning::kNone};
  const train::NcfTrainer trainer(model, cfg, pos);
  EXPECT_GE(planned, trainer.arena().bytes() +
                         size_t(trainer.instances_per_epoch()) * (sizeof(int32_t) * 3 + 4));
  EXPECT_EQ(planned, train::NcfTrainer::planned_bytes(model, cfg, pos));
  // And not wildly more: the data-sized part is 22 bytes per instance plus the positives.
  EXPECT_LT(planned, trainer.arena().bytes() + size_t(trainer.instances_per_epoch()) * 40 + 65536);
  fs::remove_all(dir);
}

}  // namespace jobs_test
}  // namespace shoal::fleet
