#include <algorithm>

#include "shoal/core/rng.h"
#include "shoal/kernels/philox.h"

namespace shoal::kernels {

void philox4x32_lanes_ref(uint64_t seed, const uint32_t (&ctr)[4][kPhiloxLanes],
                          uint32_t (&out)[4][kPhiloxLanes]) {
  for (size_t l = 0; l < kPhiloxLanes; ++l) {
    const auto b = Philox(seed, ctr[3][l])
                       .block(ctr[0][l] | (static_cast<uint64_t>(ctr[1][l]) << 32), ctr[2][l]);
    for (size_t w = 0; w < 4; ++w) out[w][l] = b[w];
  }
}

void philox4x32_blocks_ref(uint64_t seed, uint64_t stream, uint64_t a, uint64_t b0,
                           uint32_t (&words)[4 * kPhiloxLanes]) {
  const Philox philox(seed, stream);
  for (size_t i = 0; i < kPhiloxLanes; ++i) {
    const auto w = philox.block(a, b0 + i);
    std::copy(w.begin(), w.end(), words + 4 * i);
  }
}

}  // namespace shoal::kernels
