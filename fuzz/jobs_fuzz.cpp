// Fleet jobs files (JSON lines or CSV) and the model configs inside them: parse_jobs, then
// build_jobs, which reads each line's data set and checks its config (ConfigReader) and plans
// its arena, without training. The data sets are tiny files in a scratch folder made at start;
// a line naming anything outside that folder is not built (the fuzzer must not read
// /dev/zero or the machine's files).
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "fuzz_input.h"
#include "shoal/fleet/jobs.h"

namespace {

namespace fs = std::filesystem;

std::string g_base_dir;

void write_file(const std::string& name, const std::string& text) {
  std::ofstream(g_base_dir + "/" + name, std::ios::binary) << text;
}

// Only the scratch folder's own files: the resolved path's folder must be it.
bool inside_base_dir(const std::string& path) {
  return path.empty() || fs::path(path).parent_path().string() == g_base_dir;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::string tmpl = (fs::temp_directory_path() / "shoal_jobs_fuzz_XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) std::abort();
  g_base_dir = tmpl;
  std::atexit([] {
    std::error_code ignored;
    fs::remove_all(g_base_dir, ignored);
  });
  std::string series = "unique_id,ds,y,x\n";
  for (const char* id : {"a", "b"})
    for (int t = 1; t <= 40; ++t) series += fmt::format("{},{},{},{}\n", id, t, t % 7, t % 3);
  write_file("series.csv", series);
  write_file("mlp.csv", "x1,x2,y\n1,2,3\n2,1,3\n0,1,1\n4,4,8\n3,1,4\n1,1,2\n");
  write_file("u.train.rating", "0\t1\t5\t1\n0\t2\t3\t2\n1\t0\t4\t3\n2\t3\t1\t4\n");
  write_file("u.test.rating", "0\t3\t5\t9\n1\t2\t4\t9\n2\t1\t2\t9\n");
  write_file("u.test.negative", "(0,3)\t0\t4\n(1,2)\t1\t5\n(2,1)\t2\t6\n");
  write_file("ncf.csv", "user,item,label,c\n0,1,1,0.5\n1,2,1,0.1\n2,0,0,1\n");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  const std::string text = fuzz::bytes_of(data, size);
  fuzz::expect_ok_or_error([&] {
    const std::vector<fleet::JobSpec> specs = fleet::parse_jobs(text, "fuzz.jobs", g_base_dir);
    for (const fleet::JobSpec& s : specs) {
      if (!inside_base_dir(s.data) || !inside_base_dir(s.test)) return;
      // Paths inside a config (ncf's test_negatives) resolve the same way.
      const std::string config =
          s.config.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      if (config.find('/') != std::string::npos || config.find("..") != std::string::npos) return;
    }
    const fleet::BuiltJobs built = fleet::build_jobs(specs);
    if (built.jobs.size() != built.info.size()) std::abort();
  });
  return 0;
}
