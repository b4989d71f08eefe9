#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <sstream>
#include <vector>

#include "shoal/core/thread_pool.h"
#include "shoal/profile/html.h"
#include "shoal/profile/report.h"
#include "shoal/profile/trace.h"
#include "shoal/train/mlp_trainer.h"
#include "support/alloc_counter.h"

namespace shoal::profile {
namespace trace_test {

struct Problem {
  std::vector<double> x, y;
  Index rows;
  explicit Problem(Index n) : rows(n) {
    RngStream rng(5, 3);
    for (Index r = 0; r < n; ++r) {
      double v[10];
      for (double& e : v) e = rng.uniform();
      x.insert(x.end(), v, v + 10);
      y.push_back(10 * std::sin(std::numbers::pi * v[0] * v[1]) + 10 * v[3] + 5 * v[4]);
    }
  }
  ConstMat<double> xs() const { return {x.data(), rows, 10}; }
  ConstMat<double> ys() const { return {y.data(), rows, 1}; }
};

const models::Mlp<float>::Config kModel{.in = 10, .hidden = {32, 32}, .out = 1};

TEST(Trace, MlpTrainingTraceIsValidNestedAndComplete) {
  Problem p(256);
  train::MlpTrainer t(kModel, {.batch_size = 32, .seed = 1, .threads = 2}, p.xs(), p.ys());
  RecorderConfig cfg;
  cfg.mode = Mode::kTrace;
  cfg.max_threads = 4;
  Recorder rec(cfg);
  rec.set_model_name(0, "mlp \"demo\"");  // escaping
  t.set_profiler(&rec);
  rec.start();
  t.train_epoch();
  t.evaluate(p.xs(), p.ys());
  t.train_epoch();
  rec.stop();
  Machine m{.peak_gflops = 100, .bandwidth_gbs = 20, .cpu = "test", .source = "test"};
  const std::string json = chrome_trace_json(rec, m);
  const TraceCheck check = validate_chrome_trace(json);
  for (const auto& e : check.errors) ADD_FAILURE() << e;
  EXPECT_TRUE(check.ok());
  EXPECT_EQ(check.tracks, 2);  // one model, two threads
  // 16 steps; per thread per step: batch, 3 fwd, loss fwd/bwd, 3 bwd, optimizer (+ 2 waits and
  // the step on the main thread), the shuffles and the eval.
  EXPECT_GT(check.x_events, 16 * 20);
  EXPECT_EQ(rec.dropped_events(), 0u);
  EXPECT_NE(json.find("\"ProfilerStep#0\""), std::string::npos);
  EXPECT_NE(json.find("\"layers.2.backward\""), std::string::npos);
  EXPECT_NE(json.find("\"process_name\""), std::string::npos);
  EXPECT_NE(json.find("mlp \\\"demo\\\""), std::string::npos);
  // A9: compact events.
  EXPECT_LT(static_cast<double>(json.size()) / static_cast<double>(check.x_events), 130.0);

  const Report r = summarize(rec, m);
  EXPECT_EQ(r.steps, 17);  // 16 optimizer steps, then the last step is closed by stop()
  EXPECT_NEAR(r.breakdown.sum_ns(), r.wall_ns, 0.005 * r.wall_ns);
  EXPECT_GT(r.breakdown.ns[static_cast<int>(Category::kForward)], 0);
  EXPECT_GT(r.breakdown.ns[static_cast<int>(Category::kBackward)], 0);
  EXPECT_GT(r.breakdown.ns[static_cast<int>(Category::kOptimizer)], 0);
  EXPECT_GT(r.breakdown.ns[static_cast<int>(Category::kEval)], 0);
  EXPECT_EQ(r.threads.size(), 2u);
  for (const auto& z : r.zones)
    if (z.name == "layers.0.forward") {
      // 2 epochs × 256 rows + the eval's 256 rows, split over threads and chunks.
      EXPECT_EQ(z.cost.flops, 3 * 256 * (2 * 10 * 32 + 32 + 32.0));
      EXPECT_TRUE(std::string(z.bound) == "compute" || std::string(z.bound) == "memory");
    }
  const std::string table = format_table(r);
  EXPECT_NE(table.find("layers.1.forward"), std::string::npos);
  EXPECT_NE(table.find("parallel efficiency"), std::string::npos);
  const std::string html = html_report(r, "test");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);  // self-contained
  EXPECT_EQ(html.find("<script"), std::string::npos);

  // Files are written through a temporary name.
  const auto dir = std::filesystem::temp_directory_path() / "shoal_trace_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "t.pt.trace.json").string();
  write_chrome_trace(rec, m, path);
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), json);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove_all(dir);
}

TEST(Trace, ValidatorRejectsBadTraces) {
  EXPECT_FALSE(validate_chrome_trace("{\"traceEvents\":[").ok());
  EXPECT_FALSE(validate_chrome_trace("[]").ok());
  EXPECT_TRUE(validate_chrome_trace("{\"traceEvents\":[]}").ok());
  // Overlapping without nesting on one thread.
  const char* overlap =
      R"({"traceEvents":[{"ph":"X","cat":"c","name":"a","pid":0,"tid":0,"ts":0,"dur":10},
      {"ph":"X","cat":"c","name":"b","pid":0,"tid":0,"ts":5,"dur":10}]})";
  EXPECT_FALSE(validate_chrome_trace(overlap).ok());
  // The same on two threads is fine, and so is proper nesting.
  const char* ok =
      R"({"traceEvents":[{"ph":"X","cat":"c","name":"a","pid":0,"tid":0,"ts":0,"dur":10},
      {"ph":"X","cat":"c","name":"b","pid":0,"tid":1,"ts":5,"dur":10},
      {"ph":"X","cat":"c","name":"c","pid":0,"tid":0,"ts":2,"dur":8}]})";
  EXPECT_TRUE(validate_chrome_trace(ok).ok());
  const char* neg = R"({"traceEvents":[{"ph":"X","cat":"c","name":"a","pid":0,"tid":0,"ts":0,
      "dur":-1}]})";
  EXPECT_FALSE(validate_chrome_trace(neg).ok());
  const char* big_tid = R"({"traceEvents":[{"ph":"X","cat":"c","name":"a","pid":0,
      "tid":4294967296,"ts":0,"dur":1}]})";
  EXPECT_FALSE(validate_chrome_trace(big_tid).ok());
  const char* no_name = R"({"traceEvents":[{"ph":"X","cat":"c","pid":0,"tid":0,"ts":0,"dur":1}]})";
  EXPECT_FALSE(validate_chrome_trace(no_name).ok());
}

TEST(Profiler, NoHeapAllocationWhileProfilingTrainingSteps) {
  Problem p(256);
  for (Mode mode : {Mode::kStats, Mode::kTrace}) {
    for (int threads : {1, 2}) {
      train::MlpTrainer t(kModel, {.batch_size = 16, .seed = 1, .threads = threads}, p.xs(),
                          p.ys());
      RecorderConfig cfg;
      cfg.mode = mode;
      cfg.max_threads = 4;
      Recorder rec(cfg);
      t.set_profiler(&rec);
      rec.start();
      t.train_epoch();  // warm-up: JIT kernels, thread-local slots
      testing::AllocCounter counter;
      t.train_epoch();
      t.train_epoch();
      EXPECT_EQ(counter.count(), 0) << mode_name(mode) << " threads=" << threads;
      rec.stop();
      EXPECT_GT(rec.stats(0, kStepZone).calls, 16u);
    }
  }
}

}  // namespace trace_test
}  // namespace shoal::profile
