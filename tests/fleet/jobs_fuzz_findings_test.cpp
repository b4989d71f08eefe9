// Jobs files that fuzz/jobs_fuzz found mishandled (inputs in tests/fuzz_regressions/jobs/):
// - CSV cells that are not UTF-8: a JSON exception escaped build_jobs when the job's key was
//   computed; now the line fails alone with a shoal error naming the field.
// - integer configs beyond int64 (1e30): an undefined float-to-integer conversion; now the
//   job fails with a shoal error naming the key.
// - a seed or max_series that is a float (7.8e100): converted to an integer unchecked; now the
//   line fails with a shoal error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "shoal/core/error.h"
#include "shoal/fleet/jobs.h"

namespace shoal::fleet {
namespace jobs_fuzz_findings_test {

TEST(FleetJobs, CsvCellsThatAreNotUtf8FailTheirLineOnly) {
  const std::string text =
      "data,model,h\n"
      "d.csv,naive,3\n"
      "d.csv,naive,\xa0\x8d\n";
  const auto specs = parse_jobs(text, "jobs.csv", "/base");
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_TRUE(specs[0].error.empty()) << specs[0].error;
  EXPECT_NE(specs[1].error.find("jobs.csv:3"), std::string::npos) << specs[1].error;
  EXPECT_NE(specs[1].error.find("field 3 (column 'h') is not valid UTF-8"), std::string::npos)
      << specs[1].error;
  BuiltJobs built;
  EXPECT_NO_THROW(built = build_jobs(specs));
  EXPECT_EQ(built.jobs.size(), built.info.size());
}

TEST(FleetJobs, CsvHeaderThatIsNotUtf8FailsTheLinesUsingIt) {
  const auto specs = parse_jobs("data,model,\xff\n/d.csv,naive,1\n", "jobs.csv", "/base");
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_NE(specs[0].error.find("is not valid UTF-8"), std::string::npos) << specs[0].error;
  EXPECT_NO_THROW((void)build_jobs(specs));
}

TEST(FleetJobs, IntegerConfigsBeyondInt64FailTheirJob) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("shoal_jobs_range_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "train.csv");
    out << "unique_id,ds,y\n";
    for (int t = 1; t <= 12; ++t) out << "A," << t << "," << t % 3 << "\n";
  }
  for (const char* h : {"1e30", "-1e19", "9.3e18"}) {
    const std::string line =
        std::string(R"({"data": "train.csv", "model": "naive", "config": {"h": )") + h + "}}\n";
    BuiltJobs built;
    ASSERT_NO_THROW(built = build_jobs(parse_jobs(line, "jobs.jsonl", dir.string()))) << h;
    ASSERT_EQ(built.jobs.size(), 1u) << h;
    try {
      (void)built.jobs[0].run();
      ADD_FAILURE() << "h = " << h << " ran";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("config 'h' is out of range"), std::string::npos)
          << e.what();
    }
  }
  fs::remove_all(dir);
}

TEST(FleetJobs, SeedAndMaxSeriesMustBeIntegers) {
  const auto specs = parse_jobs(
      "{\"data\": \"a.csv\", \"model\": \"mlp_regressor\", \"seed\": 7.8e100}\n"
      "{\"data\": \"a.csv\", \"model\": \"naive\", \"max_series\": 1.5}\n",
      "jobs.jsonl", "/base");
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_NE(specs[0].error.find("'seed' must be an integer"), std::string::npos) << specs[0].error;
  EXPECT_NE(specs[1].error.find("'max_series' must be an integer"), std::string::npos)
      << specs[1].error;
  EXPECT_NO_THROW((void)build_jobs(specs));
  const auto csv = parse_jobs("data,model,seed\na.csv,mlp_regressor,1e300\n", "jobs.csv", "/base");
  ASSERT_EQ(csv.size(), 1u);
  EXPECT_NE(csv[0].error.find("'seed' must be an integer"), std::string::npos) << csv[0].error;
}

}  // namespace jobs_fuzz_findings_test
}  // namespace shoal::fleet
