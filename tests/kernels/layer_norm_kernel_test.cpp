// The windowed LayerNorm kernels against their *_ref twins: samples of R rows × C columns with
// C around the 8-float vector, padded (ld > cols) and misaligned views, with and without the
// fused residual, every affine variant, float and double; sums are compared within a bound of
// the rounding of an R·C-term sum.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "shoal/kernels/layer_norm.h"

namespace shoal::kernels {
namespace layer_norm_kernel_test {

using testing::TestMat;

// |got − want| ≤ tol·(1 + |want|) + extra: extra covers a sample whose 1/σ amplifies the
// rounding of its mean (σ² ≪ eps).
template <class T>
void expect_near(ConstMat<T> got, ConstMat<T> want, T tol, const std::string& what, T extra = 0) {
  for (Index i = 0; i < got.rows; ++i)
    for (Index j = 0; j < got.cols; ++j)
      ASSERT_NEAR(got(i, j), want(i, j), tol * (T(1) + std::abs(want(i, j))) + extra)
          << what << " at (" << i << ", " << j << ")";
}

template <class T>
void expect_near(const std::vector<T>& got, const std::vector<T>& want, T tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (T(1) + std::abs(want[i]))) << what << " at " << i;
}

template <class T>
std::vector<T> random_vec(RngStream& rng, Index n, float lo, float hi) {
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& e : v) e = static_cast<T>(rng.uniform(lo, hi));
  return v;
}

template <class T>
void check_layer_norm() {
  RngStream rng(9, 1);
  for (Index n : {1, 2, 3})
    for (Index r : {1, 2, 5})
      for (Index c : {1, 3, 7, 8, 9, 16, 17, 24})
        for (Index pad : {0, 5})
          for (Index offset : {0, 1})
            for (int variant = 0; variant < 4; ++variant) {
              // variant 0: affine + bias, 1: weight only, 2: no affine, 3: residual, affine.
              const bool has_w = variant != 2, has_b = variant == 0 || variant == 3;
              const bool residual = variant == 3;
              const std::string what =
                  fmt::format("{} n={} r={} c={} pad={} off={} variant={}",
                              testing::type_name(sizeof(T) == 8), n, r, c, pad, offset, variant);
              const Index rows = n * r;
              TestMat<T> x(rows, c, pad, offset), res(rows, c, pad, offset + 1);
              TestMat<T> s(rows, c, pad, offset), s_ref(rows, c, pad, offset);
              TestMat<T> y(rows, c, pad, offset), y_ref(rows, c, pad, offset);
              // An offset common to the sample, so the two-pass variance matters.
              x.fill_random(rng, T(2), T(4));
              res.fill_random(rng);
              auto w = random_vec<T>(rng, r * c, 0.5f, 1.5f), b = random_vec<T>(rng, r * c, -1, 1);
              const T* wp = has_w ? w.data() : nullptr;
              const T* bp = has_b ? b.data() : nullptr;
              std::vector<T> mean(static_cast<size_t>(n)), rstd(mean.size()), mean_ref(mean.size()),
                  rstd_ref(mean.size());
              if (residual) {
                layer_norm_residual_forward<T>(n, r, c, 1e-5, wp, bp, x.cview(), res.cview(),
                                               s.view, y.view, mean.data(), rstd.data());
                layer_norm_residual_forward_ref<T>(n, r, c, 1e-5, wp, bp, x.cview(), res.cview(),
                                                   s_ref.view, y_ref.view, mean_ref.data(),
                                                   rstd_ref.data());
                expect_near<T>(s.cview(), s_ref.cview(), T(0), "s " + what);
              } else {
                layer_norm_forward<T>(n, r, c, 1e-5, wp, bp, x.cview(), y.view, mean.data(),
                                      rstd.data());
                layer_norm_forward_ref<T>(n, r, c, 1e-5, wp, bp, x.cview(), y_ref.view,
                                          mean_ref.data(), rstd_ref.data());
              }
              const T tol = T(8) * static_cast<T>(rows * c + 8) * testing::eps<T>();
              expect_near(mean, mean_ref, tol, "mean " + what);
              expect_near(rstd, rstd_ref, tol, "rstd " + what);
              const T max_rstd = *std::max_element(rstd_ref.begin(), rstd_ref.end());
              expect_near<T>(y.cview(), y_ref.cview(), tol, "y " + what, T(8) * tol * max_rstd);
              for (Index i = 0; i < rows; ++i)  // the padding is never written
                for (Index j = c; j < c + pad; ++j) ASSERT_EQ(y.view.data[i * y.view.ld + j], T(0));

              // Backward from the same statistics, dx aliasing dy in half the cases.
              ConstMat<T> xin = residual ? s.cview() : x.cview();
              TestMat<T> dy(rows, c, pad, offset + 1), dx(rows, c, pad, offset);
              dy.fill_random(rng);
              TestMat<T> dy_ref = dy, dx_ref = dx;
              dy_ref.view.data = dy_ref.storage.data() + (dy.view.data - dy.storage.data());
              dx_ref.view.data = dx_ref.storage.data() + offset;
              auto dw = random_vec<T>(rng, r * c, -1, 1), db = random_vec<T>(rng, r * c, -1, 1);
              auto dw_ref = dw, db_ref = db;
              const bool alias = (c + pad) % 2 == 1;
              MatView<T> dxv = alias ? dy.view : dx.view;
              MatView<T> dxv_ref = alias ? dy_ref.view : dx_ref.view;
              layer_norm_backward<T>(n, r, c, wp, has_w ? dw.data() : nullptr,
                                     has_b ? db.data() : nullptr, mean.data(), rstd.data(), xin,
                                     dy.cview(), dxv);
              layer_norm_backward_ref<T>(n, r, c, wp, has_w ? dw_ref.data() : nullptr,
                                         has_b ? db_ref.data() : nullptr, mean.data(), rstd.data(),
                                         xin, dy_ref.cview(), dxv_ref);
              expect_near<T>(dxv, dxv_ref, T(4) * tol, "dx " + what, T(4) * tol * max_rstd);
              expect_near(dw, dw_ref, tol, "dw " + what);
              expect_near(db, db_ref, tol, "db " + what);
            }
}

TEST(LayerNormKernels, MatchRefFloat) {
  check_layer_norm<float>();
}
TEST(LayerNormKernels, MatchRefDouble) {
  check_layer_norm<double>();
}

}  // namespace layer_norm_kernel_test
}  // namespace shoal::kernels
