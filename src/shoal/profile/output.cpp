#include "shoal/profile/output.h"

#include <cstdlib>
#include <filesystem>

#include "shoal/core/file_io.h"
#include "shoal/profile/html.h"
#include "shoal/profile/machine.h"
#include "shoal/profile/report.h"
#include "shoal/profile/trace.h"

namespace shoal::profile {

ProfileOutput write_profile(Recorder& rec, const std::string& dir, std::string_view name,
                            int table_rows, bool gzip) {
  rec.stop();
  const char* env = std::getenv("SHOAL_PROFILE_MEASURE");
  const bool may_measure = env == nullptr || std::string_view(env) != "0";
  ProfileOutput out;
  auto cached = load_cached_machine();
  out.measured = !cached && may_measure;
  const Machine machine = cached ? *cached : machine_roofs(may_measure);
  const Report report = summarize(rec, machine);
  out.table = format_table(report, table_rows);
  // A path holding a file, or an input folder, is refused before anything is written.
  OutputPlan({}).folder(dir, "profile out");
  std::filesystem::create_directories(dir);
  const std::string base = (std::filesystem::path(dir) / std::string(name)).string();
  if (rec.mode() == Mode::kTrace) {
    out.trace_path = base + (gzip ? ".pt.trace.json.gz" : ".pt.trace.json");
    write_chrome_trace(rec, machine, out.trace_path);
  }
  out.report_path = base + ".report.html";
  out.summary_path = base + ".summary.json";
  write_html_report(report, "shoal profile: " + std::string(name), out.report_path);
  write_report_json(report, out.summary_path);
  return out;
}

int FitProcesses::pick(const std::string& fit_name) {
  std::lock_guard<std::mutex> lock(mu_);
  // model_names() holds the recorder's model 0 (the fleet's own zones) and every one added.
  if (int(rec_.model_names().size()) <= own_) return rec_.add_model(fit_name);
  if (shared_ < 0) shared_ = rec_.add_model(shared_name_);
  return shared_;
}

}  // namespace shoal::profile
