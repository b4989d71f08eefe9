#include "shoal/core/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>

namespace shoal {
namespace huge_pages_test {

// kB of AnonHugePages in the mapping that holds `p` (/proc/self/smaps), -1 if not found.
long anon_huge_kb(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= addr && addr < hi;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) return std::stol(line.substr(14));
  }
  return -1;
}

bool thp_allowed() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(f, s);
  return s.find("[always]") != std::string::npos || s.find("[madvise]") != std::string::npos;
}

TEST(HugePages, LargeBlocksAreAlignedAndBackedByHugePages) {
  const size_t bytes = 3 * kHugePageBytes + 12345;
  auto* p = static_cast<uint8_t*>(huge_alloc(bytes));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePageBytes, 0u);
  for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(i * 7);
  size_t bad = 0;
  for (size_t i = 0; i < bytes; ++i) bad += p[i] != static_cast<uint8_t>(i * 7) ? 1 : 0;
  EXPECT_EQ(bad, 0u);
  // Under user-mode qemu (a cross build's tests, tests/CMakeLists.txt) the emulator keeps
  // madvise to itself: no huge page is ever asked of the host kernel.
  if (const char* emulator = std::getenv("SHOAL_TEST_EMULATOR"))
    GTEST_SKIP() << "skipped: under " << emulator << ", madvise does not reach the host kernel";
  if (thp_allowed()) {
    // Advised and touched after the advice: the kernel backs the whole huge pages with huge
    // pages when it can find them (it may fall back for some; not for all on an idle machine).
    EXPECT_GT(anon_huge_kb(p), 0) << "no huge page backs the block";
  }
  huge_free(p, bytes);
}

TEST(HugePages, SmallBlocksAndVectorGrowth) {
  void* small = huge_alloc(100);
  ASSERT_NE(small, nullptr);
  huge_free(small, 100);
  HugePageVector<float> v;
  // Grows across the huge-page threshold: the elements survive each reallocation.
  const size_t n = 3 * kHugePageBytes / sizeof(float);
  for (size_t i = 0; i < n; ++i) v.push_back(static_cast<float>(i % 1000));
  double sum = std::accumulate(v.begin(), v.end(), 0.0);
  EXPECT_DOUBLE_EQ(sum, static_cast<double>(n / 1000) * 499500.0 +
                            static_cast<double>((n % 1000) * (n % 1000 - 1) / 2));
}

}  // namespace huge_pages_test
}  // namespace shoal
