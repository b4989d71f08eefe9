// SHOAL_TEST_STEP_SCALE: how much slower the tests run here than in a release build. The asan
// test preset sets it to 10 (the sanitizers' -O0 code runs 10-30x slower); unset, 1. Tests that
// train for a number of steps, or check every element, take the same code paths with less work
// under it, so the sanitizers still watch every path.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace shoal::testing {

inline int64_t step_scale() {
  const char* s = std::getenv("SHOAL_TEST_STEP_SCALE");
  return std::max<int64_t>(s != nullptr ? std::atoll(s) : 1, 1);
}

// `steps` training steps cut by the step scale, at least `at_least`.
inline int64_t scaled_steps(int64_t steps, int64_t at_least = 3) {
  return std::max(steps / step_scale(), std::min(steps, at_least));
}

}  // namespace shoal::testing
