// A CSV jobs file whose cells are not UTF-8 (found by fuzz/jobs_fuzz): the line fails alone,
// with a shoal error naming the field, instead of a JSON exception escaping build_jobs when the
// job's key is computed.
#include <gtest/gtest.h>

#include <string>

#include "shoal/fleet/jobs.h"

namespace shoal::fleet {
namespace {

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

}  // namespace
}  // namespace shoal::fleet
