// The vector Philox kernels against their *_ref twins over Philox::block: bitwise, on keys and
// counters whose words exercise every bit, block indices that wrap in 32 bits, and output
// arrays at every offset of a 32-byte line.
#include <gtest/gtest.h>

#include <vector>

#include "shoal/core/rng.h"
#include "shoal/kernels/philox.h"

namespace shoal::kernels {
namespace philox_test {

constexpr size_t kWords = 4 * kPhiloxLanes;

uint64_t draw64(RngStream& rng) {
  return (static_cast<uint64_t>(rng.next_u32()) << 32) | rng.next_u32();
}

TEST(Philox, LanesMatchRefBitwise) {
  RngStream rng(11, 1);
  for (int rep = 0; rep < 64; ++rep) {
    const uint64_t seed = draw64(rng);
    uint32_t ctr[4][kPhiloxLanes], out[4][kPhiloxLanes], ref[4][kPhiloxLanes];
    for (auto& word : ctr)
      for (auto& x : word) x = rng.next_u32();
    philox4x32_lanes(seed, ctr, out);
    philox4x32_lanes_ref(seed, ctr, ref);
    for (size_t w = 0; w < 4; ++w)
      for (size_t l = 0; l < kPhiloxLanes; ++l) ASSERT_EQ(out[w][l], ref[w][l]) << rep << " " << l;
  }
}

TEST(Philox, BlocksMatchRefAndScalarBlocksBitwise) {
  RngStream rng(11, 2);
  const uint64_t firsts[] = {0, 1, 7, 1000, 0xFFFFFFF0u, 0xFFFFFFFFu, 0x1FFFFFFE5ull};
  for (int rep = 0; rep < 8; ++rep)
    for (uint64_t b0 : firsts)
      for (size_t offset = 0; offset < 8; ++offset) {
        const uint64_t seed = draw64(rng), stream = draw64(rng), a = rep % 2 ? draw64(rng) : 3;
        std::vector<uint32_t> storage(kWords + 8, 0xDEADBEEFu), ref(kWords);
        auto& words = *reinterpret_cast<uint32_t(*)[kWords]>(storage.data() + offset);
        philox4x32_blocks(seed, stream, a, b0, words);
        philox4x32_blocks_ref(seed, stream, a, b0,
                              *reinterpret_cast<uint32_t(*)[kWords]>(ref.data()));
        const Philox scalar(seed, stream);
        for (size_t i = 0; i < kPhiloxLanes; ++i) {
          const auto blk = scalar.block(a, b0 + i);
          for (size_t w = 0; w < 4; ++w) {
            ASSERT_EQ(words[4 * i + w], ref[4 * i + w]) << "b0 " << b0 << " block " << i;
            ASSERT_EQ(ref[4 * i + w], blk[w]) << "b0 " << b0 << " block " << i;
          }
        }
        for (size_t k = 0; k < storage.size(); ++k) {
          if (k < offset || k >= offset + kWords) {
            ASSERT_EQ(storage[k], 0xDEADBEEFu) << "wrote outside the words at " << k;
          }
        }
      }
}

}  // namespace philox_test
}  // namespace shoal::kernels
