// No fit lost: a fleet killed with SIGKILL mid-run and rerun, with a broken job among good ones,
// ends with every good job's output exactly once; and a journal written with other settings is
// refused instead of mixed in.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "shoal/core/error.h"
#include "shoal/fleet/fleet.h"

namespace shoal::fleet {
namespace crash_test {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() /
          ("shoal_fleet_crash_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

constexpr int kJobs = 40;
constexpr int kBroken = 17;

// Job i sleeps a little (so that a kill lands mid-run) and outputs "i,i*i"; job kBroken throws.
std::vector<Job> slow_jobs(std::atomic<int>* runs, const std::string& key = "v1") {
  std::vector<Job> jobs;
  for (int i = 0; i < kJobs; ++i) {
    jobs.push_back({"job" + std::to_string(i), 0,
                    [i, runs] {
                      if (runs) ++*runs;
                      std::this_thread::sleep_for(std::chrono::milliseconds(20));
                      if (i == kBroken) throw Error("series too short");
                      return JobOutput{std::to_string(i) + "," + std::to_string(i * i) + "\n"};
                    },
                    key});
  }
  return jobs;
}

size_t count_lines(const std::string& path) {
  std::ifstream in(path);
  size_t n = 0;
  for (std::string l; std::getline(in, l);) ++n;
  return n;
}

TEST(FleetCrash, SigkillMidRunThenRerunLosesNoFitAndDuplicatesNone) {
  const std::string journal = temp_path("kill.journal");
  fs::remove(journal);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    run_fleet(slow_jobs(nullptr), {.workers = 2, .journal = journal, .progress = false});
    ::_exit(0);  // not reached in time: the parent kills it first
  }
  // Kill once a few jobs are journalled, well before all 40 (≥ 400 ms of work) are done.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (count_lines(journal) < 5 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child finished before it was killed";
  const size_t journalled = read_journal(journal).size();
  ASSERT_GE(journalled, 5u);
  ASSERT_LT(journalled, size_t(kJobs));

  std::atomic<int> runs{0};
  FleetSummary s;
  const auto records =
      run_fleet(slow_jobs(&runs), {.workers = 2, .journal = journal, .progress = false}, &s);
  EXPECT_EQ(runs.load(), kJobs - static_cast<int>(journalled));  // finished jobs not redone
  EXPECT_EQ(s.skipped, static_cast<int64_t>(journalled));
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.not_run, 0);

  // The final output, assembled as the CLI does: every good job exactly once, in job order.
  std::string out;
  for (const JobRecord& r : records)
    if (r.ok) out += r.output.rows;
  std::map<int, int> seen;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    const int i = std::stoi(line.substr(0, line.find(',')));
    EXPECT_EQ(line, std::to_string(i) + "," + std::to_string(i * i));
    ++seen[i];
  }
  EXPECT_EQ(seen.size(), size_t(kJobs - 1));
  for (int i = 0; i < kJobs; ++i) EXPECT_EQ(seen[i], i == kBroken ? 0 : 1) << "job " << i;
  EXPECT_FALSE(records[kBroken].ok);
  EXPECT_EQ(records[kBroken].error, "series too short");

  // A third run finds everything done and gives the same records without running anything.
  runs = 0;
  const auto again =
      run_fleet(slow_jobs(&runs), {.workers = 2, .journal = journal, .progress = false});
  EXPECT_EQ(runs.load(), 0);
  for (size_t i = 0; i < records.size(); ++i)
    EXPECT_EQ(again[i].output.rows, records[i].output.rows);
  fs::remove(journal);
}

TEST(FleetCrash, JournalOfOtherSettingsIsRefusedNotMixed) {
  const std::string journal = temp_path("settings.journal");
  fs::remove(journal);
  std::atomic<int> runs{0};
  run_fleet(slow_jobs(&runs, "v1"), {.workers = 2, .journal = journal, .progress = false});
  runs = 0;
  try {
    run_fleet(slow_jobs(&runs, "v2"), {.workers = 2, .journal = journal, .progress = false});
    FAIL() << "a journal with other settings was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("other settings"), std::string::npos) << e.what();
  }
  EXPECT_EQ(runs.load(), 0);
  fs::remove(journal);
}

TEST(FleetCrash, ARerunAfterATornAppendKeepsTheJournalReadable) {
  const std::string journal = temp_path("torn.journal");
  fs::remove(journal);
  std::atomic<int> runs{0};
  auto first = slow_jobs(&runs);
  first.resize(10);
  run_fleet(first, {.workers = 2, .journal = journal, .progress = false});
  {
    std::ofstream out(journal, std::ios::app);
    out << R"({"id":"job12","ok":tr)";  // killed mid-append
  }
  runs = 0;
  run_fleet(slow_jobs(&runs), {.workers = 2, .journal = journal, .progress = false});
  EXPECT_EQ(runs.load(), kJobs - 10);
  const auto records = read_journal(journal);  // would throw on a glued line
  EXPECT_EQ(records.size(), size_t(kJobs));
  fs::remove(journal);
}

}  // namespace crash_test
}  // namespace shoal::fleet
