// The time-Linear weight gradient against its *_ref twin: step counts around the 4-row tile,
// column counts around the 8-float vector, padded (ld > cols) and misaligned operands, float
// and double, accumulating into a non-zero dW.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <cmath>
#include <vector>

#include "kernel_test_util.h"
#include "shoal/kernels/time_linear.h"

namespace shoal::kernels {
namespace time_linear_test {

using testing::TestMat;

template <class T>
void check_time_weight_grad() {
  RngStream rng(5, 1);
  for (Index no : {1, 3, 4, 5, 9})
    for (Index ni : {1, 2, 7})
      for (Index c : {1, 7, 8, 9, 17, 33})
        for (Index batch : {1, 2, 3})
          for (Index pad : {0, 3})
            for (Index offset : {0, 1}) {
              TestMat<T> g(batch * no, c, pad, offset), x(batch * ni, c, pad, offset + 1);
              g.fill_random(rng);
              x.fill_random(rng);
              std::vector<T> dw(static_cast<size_t>(no * ni) + 1);
              for (auto& v : dw) v = static_cast<T>(rng.uniform(-1, 1));
              const T sentinel = dw.back();
              std::vector<T> dw_ref = dw, acc(static_cast<size_t>(no * ni * 8));
              time_weight_grad<T>(no, ni, c, batch, g.view.data, g.view.ld, x.view.data, x.view.ld,
                                  dw.data(), acc.data());
              time_weight_grad_ref<T>(no, ni, c, batch, g.view.data, g.view.ld, x.view.data,
                                      x.view.ld, dw_ref.data());
              const T tol = testing::dot_tolerance<T>(batch * c, static_cast<T>(batch * c + 1));
              for (Index k = 0; k < no * ni; ++k)
                ASSERT_NEAR(dw[static_cast<size_t>(k)], dw_ref[static_cast<size_t>(k)], tol)
                    << fmt::format("{} o={} i={} c={} b={} pad={} off={} at {}",
                                   testing::type_name(sizeof(T) == 8), no, ni, c, batch, pad,
                                   offset, k);
              ASSERT_EQ(dw.back(), sentinel) << "wrote past dW";
            }
}

TEST(TimeLinearKernels, WeightGradMatchesRefFloat) {
  check_time_weight_grad<float>();
}
TEST(TimeLinearKernels, WeightGradMatchesRefDouble) {
  check_time_weight_grad<double>();
}

}  // namespace time_linear_test
}  // namespace shoal::kernels
