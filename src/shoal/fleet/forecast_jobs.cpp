#include "shoal/fleet/forecast_jobs.h"

#include <numeric>

#include <fmt/format.h>

#include "shoal/data/windows.h"
#include "shoal/fleet/jobs.h"

namespace shoal::fleet {

std::vector<std::vector<Index>> forecast_panels(Index n_series, bool per_series, Index max_series) {
  const Index n = max_series > 0 ? std::min(max_series, n_series) : n_series;
  std::vector<std::vector<Index>> panels;
  if (!per_series) {
    panels.emplace_back(size_t(n));
    std::iota(panels.back().begin(), panels.back().end(), Index{0});
  } else {
    for (Index i = 0; i < n; ++i) panels.push_back({i});
  }
  return panels;
}

std::vector<Job> forecast_jobs(const ForecastData& data, const train::ForecastJob& job,
                               const std::vector<std::vector<Index>>& panels,
                               const ForecastJobsConfig& cfg, FitSink sink) {
  size_t bytes = 0;
  if (!panels.empty()) {
    try {
      bytes = train::planned_arena_bytes(
          data::Panel(*data.set, panels.front(), job.exog, data.statics, data.futr, data.h_future),
          job);
    } catch (const std::exception&) {
      bytes = 0;  // the first panel cannot be planned: its own job reports why
    }
  }
  auto shared = std::make_shared<const train::ForecastJob>(job);
  auto shared_sink = std::make_shared<const FitSink>(std::move(sink));
  std::vector<Job> jobs;
  jobs.reserve(panels.size());
  for (const std::vector<Index>& series : panels) {
    const bool one = series.size() == 1;
    const std::string id =
        one ? cfg.id_prefix + data.set->ids[size_t(series.front())] : cfg.joint_id;
    const int process = cfg.profile_process ? cfg.profile_process(id) : job.profile_model;
    const std::shared_ptr<const std::vector<std::string>> init =
        one ? cfg.series_init_weights : nullptr;
    jobs.push_back(
        {id, bytes,
         [data, shared, shared_sink, series, process, init, fit = cfg.fit]() {
           const data::Panel panel(*data.set, series, shared->exog, data.statics, data.futr,
                                   data.h_future);
           const train::ForecastJob* fit_job = shared.get();
           train::ForecastJob own;  // a copy, only where this fit differs
           const size_t s = size_t(series.front());
           const bool own_init = init != nullptr && s < init->size() && !(*init)[s].empty();
           if ((shared->profiler != nullptr && process != shared->profile_model) || own_init) {
             own = *shared;
             own.profile_model = process;
             if (own_init) own.init_weights = (*init)[s];
             fit_job = &own;
           }
           train::FitResult r =
               fit ? fit(series, panel, *fit_job) : train::fit_forecast(panel, *fit_job);
           return (*shared_sink)(series, r);
         },
         one ? digest(cfg.key + "/" + id) : cfg.key});
  }
  return jobs;
}

std::string content_digest(const data::SeriesSet& set) {
  Digest d;
  auto add_text = [&](const std::string& s) { d.add(s.c_str(), s.size() + 1); };
  for (const std::string& id : set.ids) add_text(id);
  d.add(set.offsets.data(), set.offsets.size() * sizeof(Index));
  d.add(set.ds.data(), set.ds.size() * sizeof(int64_t));
  d.add(set.y.data(), set.y.size() * sizeof(double));
  d.add(set.available.data(), set.available.size());
  for (size_t c = 0; c < set.exog.size(); ++c) {
    add_text(set.exog_names[c]);
    d.add(set.exog[c].data(), set.exog[c].size() * sizeof(double));
  }
  return d.hex();
}

}  // namespace shoal::fleet
