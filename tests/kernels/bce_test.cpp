// The one-pass BCE-with-logits (bce.h) against its plain twin over column lengths (every tail
// of the 8 lanes, several lanes, one long column), start offsets (every alignment of a float
// in a 32-byte line), logits from tiny to saturated and hard and soft labels; and a row's bits
// do not depend on where it sits in the column.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "shoal/core/rng.h"
#include "shoal/kernels/bce.h"

namespace shoal::kernels {
namespace bce_test {

// Logits spread over [-40, 40] with some tiny and saturated ones; labels 0, 1 or soft.
void fill(std::vector<float>& z, std::vector<float>& y, RngStream& rng) {
  for (size_t i = 0; i < z.size(); ++i) {
    const uint32_t kind = rng.next_u32() % 8;
    z[i] = kind == 0   ? rng.uniform(-1e-6f, 1e-6f)
           : kind == 1 ? rng.uniform(-300.0f, 300.0f)
                       : rng.uniform(-40.0f, 40.0f);
    const uint32_t label = rng.next_u32() % 3;
    y[i] = label == 2 ? rng.uniform(0.0f, 1.0f) : static_cast<float>(label);
  }
}

TEST(Bce, LanesEqualTheirTwin) {
  RngStream rng(23, 0);
  const Index lengths[] = {0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 23, 64, 1001};
  for (const Index n : lengths)
    for (Index offset = 0; offset < 8; ++offset) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " offset " << offset);
      const auto total = static_cast<size_t>(n + offset + 8);
      std::vector<float> z(total), y(total);
      fill(z, y, rng);
      // Sentinels past the column: the tail's masked stores must leave them alone.
      std::vector<float> d(total, 7.0f), d_ref(total, 7.0f);
      const float scale = 0.37f / static_cast<float>(std::max<Index>(n, 1));
      const auto o = static_cast<size_t>(offset);
      const double sum = bce_logits(&z[o], &y[o], &d[o], n, scale);
      const double sum_ref = bce_logits_ref(&z[o], &y[o], &d_ref[o], n, scale);
      // z·y is rounded once by the lanes' FMA, maybe twice by the twin: up to an ulp of z.
      double abs_z = 0;
      for (Index i = 0; i < n; ++i) abs_z += std::abs(z[o + static_cast<size_t>(i)]);
      EXPECT_NEAR(sum, sum_ref, 1e-6 * std::abs(sum_ref) + 2.4e-7 * abs_z + 1e-30);
      for (size_t i = 0; i < total; ++i) {
        if (i < o || i >= o + static_cast<size_t>(n)) {
          EXPECT_EQ(d[i], 7.0f) << i;
          continue;
        }
        // σ(z) − y cancels for saturated z: a rounding of 1 + e is an ulp of 1, times scale.
        EXPECT_NEAR(d[i], d_ref[i], 4e-7f * std::abs(d_ref[i]) + 2.5e-7f * scale) << "z " << z[i];
        // The row alone (a column's tail) gets the bits it got inside the column.
        float one = 0;
        const double li = bce_logits(&z[i], &y[i], &one, 1, scale);
        EXPECT_EQ(std::memcmp(&one, &d[i], sizeof(float)), 0) << "z " << z[i];
        float one_ref = 0;
        const double li_ref = bce_logits_ref(&z[i], &y[i], &one_ref, 1, scale);
        EXPECT_NEAR(li, li_ref, 4e-7 * std::abs(li_ref) + 2.4e-7 * std::abs(z[i]) + 1e-30)
            << "z " << z[i] << " y " << y[i];
      }
    }
}

}  // namespace bce_test
}  // namespace shoal::kernels
