// The NCF factored first layer's kernels over a set's distinct rows, read in place through the
// list (kernels/gathered_rows.h), against their plain loops in double: every output panel (32, 16
// and 8 wide) and row tail of the projection, every panel and dw row tail of the weight
// gradient, rows listed with repeats and gaps from a table wider than the part read, both
// orders' prefetch settings, dw's earlier contents and padding columns, and every operand
// misaligned (one float past a 32-byte boundary) or not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "shoal/core/rng.h"
#include "shoal/kernels/gathered_rows.h"
#include "shoal/kernels/isa.h"

namespace shoal::kernels {
namespace gathered_rows_test {

struct Case {
  Index table_rows, ld, m, e, l1;
};

// n random floats from element `offset` on (the vector's first `offset` are random too).
std::vector<float> random_floats(Index n, RngStream& rng, Index offset = 0) {
  std::vector<float> v(static_cast<size_t>(n + offset));
  for (float& x : v) x = rng.uniform(-1.0f, 1.0f);
  return v;
}

std::vector<double> widen(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

void check(const Case& c, bool prefetch, Index off, RngStream& rng) {
  SCOPED_TRACE(::testing::Message()
               << "rows " << c.table_rows << " ld " << c.ld << " m " << c.m << " e " << c.e
               << " l1 " << c.l1 << " prefetch " << prefetch << " offset " << off);
  const auto o = static_cast<size_t>(off);
  const std::vector<float> table = random_floats(c.table_rows * c.ld, rng, off);
  std::vector<int32_t> list(static_cast<size_t>(c.m));
  for (int32_t& r : list)
    r = static_cast<int32_t>(rng.next_u32() % static_cast<uint32_t>(c.table_rows));
  const std::vector<float> wt = random_floats(c.e * c.l1, rng, off);
  const std::vector<float> dz = random_floats(c.m * c.l1, rng, off);

  std::vector<float> proj(static_cast<size_t>(c.m * c.l1) + o, NAN);
  project_rows(table.data() + o, c.ld, list.data(), c.m, c.e, wt.data() + o, c.l1, proj.data() + o,
               prefetch);
  std::vector<double> want(proj.size());
  project_rows_ref<double>(widen(table).data() + o, c.ld, list.data(), c.m, c.e,
                           widen(wt).data() + o, c.l1, want.data() + o);
  for (size_t i = o; i < proj.size(); ++i)
    ASSERT_NEAR(proj[i], want[i], 1e-5 * static_cast<double>(c.e)) << "proj " << i;
  for (size_t i = 0; i < o; ++i) ASSERT_TRUE(std::isnan(proj[i])) << "written before proj";

  // dw with a padding column past e (never written) and earlier contents (accumulated into).
  const Index ldw = c.e + 3;
  std::vector<float> dw = random_floats(c.l1 * ldw, rng, off);
  std::vector<double> dw_want = widen(dw);
  rows_weight_grad(table.data() + o, c.ld, list.data(), c.m, c.e, dz.data() + o, c.l1,
                   dw.data() + o, ldw, prefetch);
  rows_weight_grad_ref<double>(widen(table).data() + o, c.ld, list.data(), c.m, c.e,
                               widen(dz).data() + o, c.l1, dw_want.data() + o, ldw);
  for (size_t i = 0; i < o; ++i) ASSERT_EQ(dw[i], dw_want[i]) << "written before dw";
  for (Index j = 0; j < c.l1; ++j)
    for (Index p = 0; p < ldw; ++p) {
      const auto i = o + static_cast<size_t>(j * ldw + p);
      ASSERT_NEAR(dw[i], dw_want[i], 1e-5 * static_cast<double>(c.m + 1)) << j << ", " << p;
    }
}

TEST(GatheredRows, KernelsEqualTheirLoops) {
  RngStream rng(17, 0);
  // (e, l1): the user's model (32, 32), the 64-wide first layer of layers 128,64,... (64, 64),
  // and widths that end in a 16- or 8-wide panel; m from one row through every tile tail to
  // more than one 96-row block of the weight gradient.
  const Index widths[][2] = {{32, 32}, {64, 64}, {16, 8}, {8, 24}, {40, 56}, {24, 40}};
  const Index counts[] = {1, 2, 3, 5, 7, 11, 12, 13, 96, 97, 200};
  for (const auto& w : widths)
    for (const Index m : counts)
      for (const bool prefetch : {false, true})
        for (const Index offset : {0, 1, 3})
          check({.table_rows = 301, .ld = w[0] + 5, .m = m, .e = w[0], .l1 = w[1]}, prefetch,
                offset, rng);
}

TEST(GatheredRows, SupportedWidths) {
  // Highway code: every path has the kernels.
  EXPECT_TRUE(rows_kernels_supported(32, 32));
  EXPECT_TRUE(rows_kernels_supported(8, 16));
  EXPECT_FALSE(rows_kernels_supported(4, 6));
  EXPECT_FALSE(rows_kernels_supported(32, 12));
  EXPECT_FALSE(rows_kernels_supported(0, 8));
}

}  // namespace gathered_rows_test
}  // namespace shoal::kernels
