// The factored first layer's kernels over a share's distinct rows, read in place through the
// list (src/shoal/models/ncf_rows.h), against their plain loops in double: every output panel
// (32, 16 and 8 wide) and row tail of the projection, every panel and dw row tail of the weight
// gradient, rows listed with repeats and gaps from a table wider than the part read, both
// orders' prefetch settings, and dw's earlier contents and padding columns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "../../src/shoal/models/ncf_rows.h"
#include "shoal/core/rng.h"

namespace shoal::models::detail {
namespace ncf_rows_test {

struct Case {
  Index table_rows, ld, m, e, l1;
};

std::vector<float> random_floats(Index n, RngStream& rng) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = rng.uniform(-1.0f, 1.0f);
  return v;
}

std::vector<double> widen(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

void check(const Case& c, bool prefetch, RngStream& rng) {
  SCOPED_TRACE(::testing::Message() << "rows " << c.table_rows << " ld " << c.ld << " m " << c.m
                                    << " e " << c.e << " l1 " << c.l1 << " prefetch " << prefetch);
  const std::vector<float> table = random_floats(c.table_rows * c.ld, rng);
  std::vector<int32_t> list(static_cast<size_t>(c.m));
  for (int32_t& r : list)
    r = static_cast<int32_t>(rng.next_u32() % static_cast<uint32_t>(c.table_rows));
  const std::vector<float> wt = random_floats(c.e * c.l1, rng);
  const std::vector<float> dz = random_floats(c.m * c.l1, rng);

  std::vector<float> proj(static_cast<size_t>(c.m * c.l1), NAN);
  project_rows(table.data(), c.ld, list.data(), c.m, c.e, wt.data(), c.l1, proj.data(), prefetch);
  std::vector<double> want(proj.size());
  project_rows_ref<double>(widen(table).data(), c.ld, list.data(), c.m, c.e, widen(wt).data(), c.l1,
                           want.data());
  for (size_t i = 0; i < proj.size(); ++i)
    ASSERT_NEAR(proj[i], want[i], 1e-5 * static_cast<double>(c.e)) << "proj " << i;

  // dw with a padding column past e (never written) and earlier contents (accumulated into).
  const Index ldw = c.e + 3;
  std::vector<float> dw = random_floats(c.l1 * ldw, rng);
  std::vector<double> dw_want = widen(dw);
  rows_weight_grad(table.data(), c.ld, list.data(), c.m, c.e, dz.data(), c.l1, dw.data(), ldw,
                   prefetch);
  rows_weight_grad_ref<double>(widen(table).data(), c.ld, list.data(), c.m, c.e, widen(dz).data(),
                               c.l1, dw_want.data(), ldw);
  for (Index j = 0; j < c.l1; ++j)
    for (Index p = 0; p < ldw; ++p) {
      const auto i = static_cast<size_t>(j * ldw + p);
      ASSERT_NEAR(dw[i], dw_want[i], 1e-5 * static_cast<double>(c.m + 1)) << j << ", " << p;
    }
}

TEST(NcfRows, KernelsEqualTheirLoops) {
  RngStream rng(17, 0);
  // (e, l1): the user's model (32, 32), the 64-wide first layer of layers 128,64,... (64, 64),
  // and widths that end in a 16- or 8-wide panel; m from one row through every tile tail to
  // more than one 96-row block of the weight gradient.
  const Index widths[][2] = {{32, 32}, {64, 64}, {16, 8}, {8, 24}, {40, 56}, {24, 40}};
  const Index counts[] = {1, 2, 3, 5, 7, 11, 12, 13, 96, 97, 200};
  for (const auto& w : widths)
    for (const Index m : counts)
      for (const bool prefetch : {false, true})
        check({.table_rows = 301, .ld = w[0] + 5, .m = m, .e = w[0], .l1 = w[1]}, prefetch, rng);
}

TEST(NcfRows, SupportedWidths) {
#if defined(__AVX2__) && defined(__FMA__)
  EXPECT_TRUE(rows_kernels_supported(32, 32));
  EXPECT_TRUE(rows_kernels_supported(8, 16));
#endif
  EXPECT_FALSE(rows_kernels_supported(4, 6));
  EXPECT_FALSE(rows_kernels_supported(32, 12));
  EXPECT_FALSE(rows_kernels_supported(0, 8));
}

}  // namespace ncf_rows_test
}  // namespace shoal::models::detail
