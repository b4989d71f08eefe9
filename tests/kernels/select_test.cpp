// select_range (select.h) against its plain twin: every tail of the 8 lanes and several blocks,
// ranges that select nothing, everything, or some (keys on both bounds included), with and
// without the context rows, inputs and outputs at every alignment of an int in 16 bytes; the
// outputs past the count stay within n.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "shoal/core/rng.h"
#include "shoal/kernels/select.h"

namespace shoal::kernels {
namespace select_test {

void check(Index n, int32_t lo, int32_t hi, bool with_ctx, Index off, RngStream& rng) {
  SCOPED_TRACE(::testing::Message() << "n " << n << " range [" << lo << ", " << hi << ") ctx "
                                    << with_ctx << " offset " << off);
  const auto o = static_cast<size_t>(off), total = static_cast<size_t>(n) + o + 8;
  std::vector<int32_t> keys(total), others(total), ctx(total);
  std::vector<float> labels(total);
  for (size_t i = 0; i < total; ++i) {
    keys[i] = static_cast<int32_t>(rng.next_u32() % 40);
    others[i] = static_cast<int32_t>(rng.next_u32());
    ctx[i] = static_cast<int32_t>(rng.next_u32());
    labels[i] = rng.uniform(0.0f, 1.0f);
  }
  struct Out {
    std::vector<int32_t> keys, others, ctx;
    std::vector<float> labels;
  };
  auto make = [&] {
    return Out{std::vector<int32_t>(total, -7), std::vector<int32_t>(total, -7),
               std::vector<int32_t>(total, -7), std::vector<float>(total, -7.0f)};
  };
  Out fast = make(), ref = make();
  const int32_t* cr = with_ctx ? ctx.data() + o : nullptr;
  const Index m = select_range(n, lo, hi, keys.data() + o, others.data() + o, cr, labels.data() + o,
                               fast.keys.data() + o, fast.others.data() + o, fast.ctx.data() + o,
                               fast.labels.data() + o);
  const Index m_ref = select_range_ref(
      n, lo, hi, keys.data() + o, others.data() + o, cr, labels.data() + o, ref.keys.data() + o,
      ref.others.data() + o, ref.ctx.data() + o, ref.labels.data() + o);
  ASSERT_EQ(m, m_ref);
  Index want = 0;
  for (Index k = 0; k < n; ++k)
    want += keys[o + static_cast<size_t>(k)] >= lo && keys[o + static_cast<size_t>(k)] < hi ? 1 : 0;
  ASSERT_EQ(m, want);
  for (size_t i = 0; i < total; ++i) {
    const bool selected = i >= o && i < o + static_cast<size_t>(m);
    const bool within = i >= o && i < o + static_cast<size_t>(n);
    if (selected) {
      EXPECT_EQ(fast.keys[i], ref.keys[i]) << i;
      EXPECT_EQ(fast.others[i], ref.others[i]) << i;
      EXPECT_EQ(fast.labels[i], ref.labels[i]) << i;
      if (with_ctx) {
        EXPECT_EQ(fast.ctx[i], ref.ctx[i]) << i;
      }
    } else if (!within) {
      EXPECT_EQ(fast.keys[i], -7) << "written outside [0, n): " << i;
      EXPECT_EQ(fast.others[i], -7) << i;
      EXPECT_EQ(fast.ctx[i], -7) << i;
      EXPECT_EQ(fast.labels[i], -7.0f) << i;
    }
    if (!with_ctx) {
      EXPECT_EQ(fast.ctx[i], -7) << "context rows written without them: " << i;
    }
  }
}

TEST(SelectRange, EqualsItsTwin) {
  RngStream rng(41, 0);
  const Index lengths[] = {0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 64, 300};
  const int32_t ranges[][2] = {{0, 40}, {10, 10}, {0, 0}, {13, 27}, {39, 40}, {-5, 3}, {20, 100}};
  for (const Index n : lengths)
    for (const auto& r : ranges)
      for (const bool with_ctx : {true, false})
        for (Index off = 0; off < 4; ++off) check(n, r[0], r[1], with_ctx, off, rng);
}

}  // namespace select_test
}  // namespace shoal::kernels
