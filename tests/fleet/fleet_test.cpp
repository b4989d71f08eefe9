#include <gtest/gtest.h>

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "shoal/core/error.h"
#include "shoal/core/thread_pool.h"
#include "shoal/fleet/fleet.h"

namespace shoal::fleet {
namespace fleet_test {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("shoal_fleet_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::vector<Job> square_jobs(int n, std::atomic<int>* runs, int fail_at = -1) {
  std::vector<Job> jobs;
  for (int i = 0; i < n; ++i) {
    jobs.push_back({"job" + std::to_string(i), 0, [i, runs, fail_at] {
                      if (runs) ++*runs;
                      if (i == fail_at) throw std::runtime_error("series too short");
                      return JobOutput{std::to_string(i * i) + "\n", {{"value", i * i}}};
                    }});
  }
  return jobs;
}

TEST(Fleet, RunsEveryJobOnceInJobOrder) {
  std::atomic<int> runs{0};
  FleetSummary s;
  auto records = run_fleet(square_jobs(50, &runs), {.workers = 2, .progress = false}, &s);
  EXPECT_EQ(runs.load(), 50);
  ASSERT_EQ(records.size(), 50u);
  for (int i = 0; i < 50; ++i) {
    EXPECT_TRUE(records[static_cast<size_t>(i)].ok);
    EXPECT_EQ(records[static_cast<size_t>(i)].output.rows, std::to_string(i * i) + "\n");
  }
  EXPECT_EQ(s.jobs, 50);
  EXPECT_EQ(s.failed, 0);
  EXPECT_EQ(s.workers, 2);
  EXPECT_GT(s.fits_per_s, 0);
}

// Worker 0 is the calling thread: pinned to one CPU while the fleet runs, and given its own
// mask back afterwards (a Python caller, and the processes it spawns later, which inherit the
// mask, must not stay on one CPU).
TEST(Fleet, TheCallerIsPinnedOnlyWhileTheFleetRuns) {
  if (allowed_cpus().size() < 2) GTEST_SKIP() << "needs two CPUs to tell pinned from not";
  const auto cpus_of_this_thread = [] {
    cpu_set_t m;
    CPU_ZERO(&m);
    pthread_getaffinity_np(pthread_self(), sizeof(m), &m);
    return CPU_COUNT(&m);
  };
  const int before = cpus_of_this_thread();
  ASSERT_GE(before, 2);
  const auto caller = std::this_thread::get_id();
  std::atomic<int> cpus_in_caller_job{-1};
  std::vector<Job> jobs;
  for (int i = 0; i < 8; ++i)
    jobs.push_back({"job" + std::to_string(i), 0, [&] {
                      if (std::this_thread::get_id() == caller)
                        cpus_in_caller_job = cpus_of_this_thread();
                      std::this_thread::sleep_for(std::chrono::milliseconds(2));
                      return JobOutput{};
                    }});
  run_fleet(jobs, {.workers = 2, .progress = false, .pin = true});
  EXPECT_EQ(cpus_in_caller_job.load(), 1);
  EXPECT_EQ(cpus_of_this_thread(), before);
}

TEST(Fleet, AFailingJobIsRecordedAndTheOthersGoOn) {
  FleetSummary s;
  auto records = run_fleet(square_jobs(10, nullptr, 3), {.workers = 2, .progress = false}, &s);
  EXPECT_FALSE(records[3].ok);
  EXPECT_EQ(records[3].error, "series too short");
  EXPECT_EQ(s.failed, 1);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(records[i].ok, i != 3) << i;
}

TEST(Fleet, ResumeSkipsFinishedJobsAndGivesTheSameResult) {
  const std::string journal = temp_path("resume.journal");
  fs::remove(journal);
  std::atomic<bool> stop{false};
  std::atomic<int> runs{0};
  auto jobs = square_jobs(20, &runs);
  // Stop after 5 jobs have started: the first run finishes only some of them.
  for (auto& j : jobs) {
    auto inner = j.run;
    j.run = [inner, &stop, &runs] {
      if (runs.load() >= 5) stop = true;
      return inner();
    };
  }
  FleetSummary first;
  run_fleet(jobs, {.workers = 1, .journal = journal, .progress = false, .stop = &stop}, &first);
  EXPECT_GT(first.not_run, 0);
  const int first_runs = runs.load();

  stop = false;
  runs = 0;
  FleetSummary second;
  auto records = run_fleet(square_jobs(20, &runs),
                           {.workers = 2, .journal = journal, .progress = false}, &second);
  EXPECT_EQ(runs.load(), 20 - first_runs);  // finished jobs are not run again
  EXPECT_EQ(second.skipped, first_runs);
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(records[static_cast<size_t>(i)].output.rows, std::to_string(i * i) + "\n");
  fs::remove(journal);
}

TEST(Fleet, JournalToleratesATornLastLineButNotCorruptionElsewhere) {
  const std::string journal = temp_path("torn.journal");
  run_fleet(square_jobs(3, nullptr), {.workers = 1, .journal = journal, .progress = false});
  {
    std::ofstream out(journal, std::ios::app);
    out << R"({"id":"job9","ok":tr)";  // a crash mid-write
  }
  EXPECT_EQ(read_journal(journal).size(), 3u);
  {
    std::ofstream out(journal, std::ios::app);
    out << "\n"
        << R"({"id":"job4","ok":true})"
        << "\n";
  }
  EXPECT_THROW(read_journal(journal), Error);
  fs::remove(journal);
}

TEST(Fleet, MemoryBudgetSerialisesBigJobsAndRejectsImpossibleOnes) {
  std::atomic<int> running{0}, peak{0};
  std::vector<Job> jobs;
  for (int i = 0; i < 6; ++i) {
    jobs.push_back({"big" + std::to_string(i), 600, [&] {
                      const int now = ++running;
                      int p = peak.load();
                      while (now > p && !peak.compare_exchange_weak(p, now)) {
                      }
                      std::this_thread::sleep_for(std::chrono::milliseconds(5));
                      --running;
                      return JobOutput{};
                    }});
  }
  jobs.push_back({"huge", 5000, [] { return JobOutput{}; }});
  FleetSummary s;
  auto records = run_fleet(jobs, {.workers = 3, .memory_limit = 1000, .progress = false}, &s);
  EXPECT_EQ(peak.load(), 1);  // two 600-byte arenas never fit under 1000 bytes together
  EXPECT_FALSE(records.back().ok);
  EXPECT_NE(records.back().error.find("--memory-limit"), std::string::npos);
  EXPECT_EQ(s.failed, 1);
}

TEST(Fleet, DuplicateIdsAreRejected) {
  std::vector<Job> jobs = {{"a", 0, [] { return JobOutput{}; }},
                           {"a", 0, [] { return JobOutput{}; }}};
  EXPECT_THROW(run_fleet(jobs, {.progress = false}), Error);
}

}  // namespace fleet_test
}  // namespace shoal::fleet
