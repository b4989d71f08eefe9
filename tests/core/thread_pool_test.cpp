#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "shoal/core/thread_pool.h"

namespace shoal {
namespace thread_pool_test {

TEST(SplitRange, CoversEverythingOnceInOrder) {
  for (Index n : {0, 1, 5, 64, 1000, 1001}) {
    for (int t : {1, 2, 3, 7}) {
      for (Index grain : {1, 4, 16}) {
        Index expect = 0;
        for (int tid = 0; tid < t; ++tid) {
          Range r = split_range(n, tid, t, grain);
          EXPECT_EQ(r.begin, expect) << n << " " << t << " " << grain;
          EXPECT_GE(r.end, r.begin);
          if (r.end < n && r.size() > 0) {
            EXPECT_EQ(r.end % grain, 0);
          }
          expect = r.end;
        }
        EXPECT_EQ(expect, n);
      }
    }
  }
}

TEST(ThreadCount, ZeroIsEveryCpuAndMoreThanTheCpusIsRefusedByName) {
  const int cpus = static_cast<int>(allowed_cpus().size());
  EXPECT_EQ(checked_thread_count(0, "num_threads"), cpus);
  EXPECT_EQ(checked_thread_count(cpus, "num_threads"), cpus);
  for (int64_t bad : {int64_t(-1), int64_t(cpus) + 1, int64_t(100000), int64_t(1) << 40}) {
    try {
      (void)checked_thread_count(bad, "workers");
      ADD_FAILURE() << bad << " threads accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("field 'workers'"), std::string::npos) << e.what();
    }
  }
}

TEST(ThreadPool, RunsEveryThreadOncePerRun) {
  ThreadPool pool(3, Pinning::kNone);
  EXPECT_EQ(pool.size(), 3);
  std::vector<int> hits(3, 0);
  for (int rep = 0; rep < 1000; ++rep) pool.run([&](int tid) { ++hits[static_cast<size_t>(tid)]; });
  for (int h : hits) EXPECT_EQ(h, 1000);
}

TEST(ThreadPool, ParallelSumIsExact) {
  ThreadPool pool(2, Pinning::kWorkers);
  const Index n = 100001;
  std::vector<int64_t> partial(static_cast<size_t>(pool.size()));
  pool.run([&](int tid) {
    Range r = split_range(n, tid, pool.size());
    int64_t s = 0;
    for (Index i = r.begin; i < r.end; ++i) s += i;
    partial[static_cast<size_t>(tid)] = s;
  });
  int64_t total = 0;
  for (auto p : partial) total += p;
  EXPECT_EQ(total, n * (n - 1) / 2);
}

TEST(ThreadPool, RethrowsWorkerExceptionAndStaysUsable) {
  ThreadPool pool(2, Pinning::kNone);
  EXPECT_THROW(pool.run([](int tid) {
    if (tid == 1) throw std::runtime_error("worker failed");
  }),
               std::runtime_error);
  std::atomic<int> count{0};
  pool.run([&](int) { ++count; });
  EXPECT_EQ(count.load(), 2);
}

// A fully pinned pool pins its caller while it lives and gives the caller its mask back after,
// and the CPU list stays the process's (a second pool or fleet must not see one CPU).
TEST(ThreadPool, PinnedPoolRestoresTheCallersMask) {
  auto mask_count = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    EXPECT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(set), &set), 0);
    return CPU_COUNT(&set);
  };
  const int before = mask_count();
  const size_t cpus = allowed_cpus().size();
  {
    ThreadPool outer(2, Pinning::kAll);
    EXPECT_EQ(mask_count(), 1);
    {
      ThreadPool inner(1, Pinning::kAll);
      EXPECT_EQ(mask_count(), 1);
    }
    EXPECT_EQ(mask_count(), 1);  // the outer pool still runs on this thread
    EXPECT_EQ(allowed_cpus().size(), cpus);
  }
  EXPECT_EQ(mask_count(), before);
}

TEST(ThreadPool, ResolveZeroMeansAllCpus) {
  EXPECT_EQ(ThreadPool::resolve(0), static_cast<int>(allowed_cpus().size()));
  EXPECT_EQ(ThreadPool::resolve(5), 5);
  EXPECT_THROW(ThreadPool::resolve(-1), Error);
}

}  // namespace thread_pool_test
}  // namespace shoal
