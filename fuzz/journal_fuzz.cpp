// Fleet journals (what a crashed or killed `shoal fleet` left behind): read_journal, then a
// resume — run_fleet over two trivial jobs with that journal, which reuses, skips or refuses
// its records. read_journal takes a path, so each input is written to a scratch file first.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "fuzz_input.h"
#include "shoal/fleet/fleet.h"

namespace {

namespace fs = std::filesystem;

std::string g_dir;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::string tmpl = (fs::temp_directory_path() / "shoal_journal_fuzz_XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) std::abort();
  g_dir = tmpl;
  std::atexit([] {
    std::error_code ignored;
    fs::remove_all(g_dir, ignored);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  const std::string journal = g_dir + "/fleet.journal";
  std::ofstream(journal, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  fuzz::expect_ok_or_error([&] { (void)fleet::read_journal(journal); });
  fuzz::expect_ok_or_error([&] {
    const auto output = [] { return fleet::JobOutput{"row\n", {{"fit_s", 0.5}}}; };
    const std::vector<fleet::Job> jobs = {{"a", 0, output, "k"}, {"b", 0, output, "k"}};
    fleet::FleetConfig cfg;
    cfg.workers = 1;
    cfg.journal = journal;
    cfg.progress = false;
    cfg.pin = false;
    fleet::FleetSummary summary;
    const auto records = fleet::run_fleet(jobs, cfg, &summary);
    if (records.size() != jobs.size()) std::abort();
    (void)fleet::summary_json(summary);
  });
  return 0;
}
