// The profiler on forecasting fits (train::fit_forecast on tsmixerx / tsmixer, as `shoal forecast`
// runs them): every layer's forward and backward, data, loss, optimizer and eval zones are
// recorded; the step breakdown sums to wall time; profiling adds no allocation per step; the
// trace validates; a profiled fleet puts each model on a trace process of its own.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "shoal/data/timeseries.h"
#include "shoal/data/windows.h"
#include "shoal/fleet/fleet.h"
#include "shoal/profile/report.h"
#include "shoal/profile/trace.h"
#include "shoal/train/forecast_job.h"
#include "support/alloc_counter.h"

namespace shoal::profile {
namespace forecast_profile_test {

// Series with a season of 12 and a historical exogenous column that leads it.
data::SeriesSet make_set(Index n_series, Index len) {
  data::SeriesSet s;
  s.source = "synthetic";
  s.offsets.push_back(0);
  s.exog_names = {"x"};
  s.exog.resize(1);
  for (Index i = 0; i < n_series; ++i) {
    s.ids.push_back("s" + std::to_string(i));
    for (Index t = 0; t < len; ++t) {
      const double season = std::sin(6.283185307179586 * double(t + i) / 12.0);
      s.ds.push_back(t);
      s.y.push_back(5.0 + 0.1 * double(t) + 2.0 * season);
      s.exog[0].push_back(season);
    }
    s.offsets.push_back(Index(s.ds.size()));
    s.freq.push_back({});
  }
  return s;
}

train::ForecastJob job_of(const std::string& model, Index steps, bool exog) {
  train::ForecastJob job;
  job.model = model;
  if (exog) job.exog.hist = {"x"};
  job.windows.h = 6;
  job.windows.input_size = 12;
  job.windows.windows_batch_size = 8;
  job.windows.val_size = 6;
  job.train.max_steps = steps;
  job.train.val_check_steps = 5;
  return job;
}

RecorderConfig config(Mode mode) {
  RecorderConfig c;
  c.mode = mode;
  c.max_threads = 4;
  return c;
}

std::set<std::string> zone_names(const Recorder& rec) {
  std::set<std::string> names;
  for (int t = 0; t < rec.threads_seen(); ++t)
    for (size_t z = 0; z < rec.zones().size(); ++z)
      if (rec.stats(t, static_cast<ZoneId>(z)).calls > 0) names.insert(rec.zones()[z].name);
  return names;
}

TEST(ForecastProfile, TsmixerxFitRecordsEveryLayerAndTheBreakdownSumsToWall) {
  const data::SeriesSet set = make_set(2, 80);
  train::ForecastJob job = job_of("tsmixerx", 12, true);
  const data::Panel panel(set, {0, 1}, job.exog);
  Recorder rec(config(Mode::kTrace));
  job.profiler = &rec;
  rec.start();
  const train::FitResult r = train::fit_forecast(panel, job);
  rec.stop();
  ASSERT_EQ(r.steps, 12);
  const std::set<std::string> names = zone_names(rec);
  for (const char* layer : {"norm", "norm.inverse", "temporal_projection", "feature_mixer_hist",
                            "first_mixing.temporal_mixer", "first_mixing.feature_mixer",
                            "mixing_block.0.temporal_mixer", "mixing_block.1.feature_mixer", "out"})
    for (const char* pass : {".forward", ".backward"})
      EXPECT_TRUE(names.count(std::string(layer) + pass)) << layer << pass;
  for (const char* z : {"data.sample", "loss.forward", "loss.backward", "optimizer.zero_grad",
                        "optimizer.step", "eval.validation", "eval.predict", "fit.setup"})
    EXPECT_TRUE(names.count(z)) << z;
  // Setup, 12 training steps and predict, each a profiler step.
  EXPECT_EQ(rec.steps_recorded(), 14);

  const Report rep = summarize(rec, {});
  ASSERT_GT(rep.wall_ns, 0);
  EXPECT_NEAR(rep.breakdown.sum_ns(), rep.wall_ns, 0.005 * rep.wall_ns);
  auto share = [&](Category c) { return rep.breakdown.ns[static_cast<int>(c)] / rep.wall_ns; };
  EXPECT_GT(share(Category::kForward), 0.0);
  EXPECT_GT(share(Category::kBackward), 0.0);
  EXPECT_GT(share(Category::kOptimizer), 0.0);
  EXPECT_GT(share(Category::kData), 0.0);
  EXPECT_GT(share(Category::kEval), 0.0);
  // Every layer zone carries analytic FLOPs.
  for (const ZoneRow& row : rep.zones) {
    if (row.category == Category::kForward || row.category == Category::kBackward) {
      EXPECT_GT(row.cost.flops, 0.0) << row.name;
    }
  }

  const TraceCheck check = validate_chrome_trace(chrome_trace_json(rec, {}));
  EXPECT_TRUE(check.ok()) << (check.errors.empty() ? "" : check.errors.front());
  EXPECT_GT(check.x_events, 14 * 20);
  EXPECT_EQ(rec.dropped_events(), 0u);
}

TEST(ForecastProfile, TsmixerFitRecordsItsBlocks) {
  const data::SeriesSet set = make_set(2, 80);
  train::ForecastJob job = job_of("tsmixer", 6, false);
  const data::Panel panel(set, {0, 1}, job.exog);
  Recorder rec(config(Mode::kStats));
  job.profiler = &rec;
  rec.start();
  train::fit_forecast(panel, job);
  rec.stop();
  const std::set<std::string> names = zone_names(rec);
  for (const char* z : {"norm.forward", "mixing_layers.0.temporal_mixer.forward",
                        "mixing_layers.1.feature_mixer.backward", "out.backward",
                        "norm.inverse.backward", "optimizer.step"})
    EXPECT_TRUE(names.count(z)) << z;
  const Report rep = summarize(rec, {});
  EXPECT_NEAR(rep.breakdown.sum_ns(), rep.wall_ns, 0.005 * rep.wall_ns);
}

// Allocations of one profiled fit: setup allocates (model, arena, zone names) but a step must
// not, so fits of 10 and 40 steps allocate equally often.
TEST(ForecastProfile, NoHeapAllocationPerProfiledStep) {
  const data::SeriesSet set = make_set(1, 90);
  for (Mode mode : {Mode::kStats, Mode::kTrace}) {
    auto allocations = [&](Index steps) {
      train::ForecastJob job = job_of("tsmixerx", steps, true);
      job.train.val_check_steps = 1000;  // no validation: its count would grow with the steps
      job.windows.val_size = 0;
      const data::Panel panel(set, {0}, job.exog);
      Recorder rec(config(mode));
      job.profiler = &rec;
      rec.start();
      testing::AllocCounter counter;
      train::fit_forecast(panel, job);
      const int64_t n = counter.count();
      rec.stop();
      EXPECT_EQ(rec.steps_recorded(), steps + 2);
      return n;
    };
    allocations(5);  // warm-up: lazily built kernels allocate once per process
    EXPECT_EQ(allocations(10), allocations(40)) << mode_name(mode);
  }
}

TEST(ForecastProfile, FleetPutsEachModelOnItsOwnTraceProcess) {
  const data::SeriesSet set = make_set(3, 60);
  const train::ForecastJob job = job_of("tsmixerx", 6, true);
  Recorder rec(config(Mode::kTrace));
  rec.set_model_name(0, "fleet");
  std::vector<fleet::Job> jobs;
  for (Index s = 0; s < set.n_series(); ++s)
    jobs.push_back({set.ids[size_t(s)], 0, [&, s] {
                      const data::Panel panel(set, {s}, job.exog);
                      train::ForecastJob pj = job;
                      pj.profiler = &rec;
                      pj.profile_model = rec.add_model("tsmixerx " + set.ids[size_t(s)]);
                      train::fit_forecast(panel, pj);
                      return fleet::JobOutput{};
                    }});
  rec.start();
  fleet::FleetSummary sum;
  fleet::run_fleet(jobs, {.workers = 2, .progress = false, .pin = false, .profiler = &rec}, &sum);
  rec.stop();
  EXPECT_EQ(sum.failed, 0);
  ASSERT_EQ(rec.model_names().size(), 4u);
  // Per model: its layer zones were called, and the fleet's job zone three times in all.
  std::set<int> models_seen;
  uint64_t jobs_seen = 0;
  for (int t = 0; t < rec.threads_seen(); ++t)
    for (size_t z = 0; z < rec.zones().size(); ++z) {
      const ZoneInfo& info = rec.zones()[z];
      const uint64_t calls = rec.stats(t, static_cast<ZoneId>(z)).calls;
      if (info.name == "out.forward" && calls > 0) models_seen.insert(info.model);
      if (info.name == "fleet.job") jobs_seen += calls;
    }
  EXPECT_EQ(models_seen, (std::set<int>{1, 2, 3}));
  EXPECT_EQ(jobs_seen, 3u);
  const std::string json = chrome_trace_json(rec, {});
  const TraceCheck check = validate_chrome_trace(json);
  EXPECT_TRUE(check.ok()) << (check.errors.empty() ? "" : check.errors.front());
  for (const char* name : {"\"fleet\"", "\"tsmixerx s0\"", "\"tsmixerx s1\"", "\"tsmixerx s2\""})
    EXPECT_NE(json.find(name), std::string::npos) << name;
  const Report rep = summarize(rec, {});
  EXPECT_NEAR(rep.breakdown.sum_ns(), rep.wall_ns, 0.005 * rep.wall_ns);
}

}  // namespace forecast_profile_test
}  // namespace shoal::profile
