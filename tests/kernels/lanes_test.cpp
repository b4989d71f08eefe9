// Lane-interleaved Linear kernels (lanes.h) against their *_ref twins over many shapes, the
// reference against the per-model linear_forward_ref / linear_backward_ref on unpacked models
// (so the layout means what lanes.h says), and pack/unpack.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <array>
#include <cmath>
#include <vector>

#include "kernel_test_util.h"
#include "shoal/kernels/gemm.h"
#include "shoal/kernels/lanes.h"

namespace shoal::kernels {
namespace lanes_test {

std::vector<float> random_lanes(Index rows, Index cols, RngStream& rng) {
  std::vector<float> v(static_cast<size_t>(lanes_size(rows, cols)) + 1);  // +1: never empty
  for (auto& e : v) e = rng.uniform(-1, 1);
  return v;
}

// |a - b| within a dot-product bound of length k for inputs in [-1, 1].
void expect_close(const std::vector<float>& a, const std::vector<float>& b, Index size, Index k,
                  const std::string& what) {
  const float tol = testing::dot_tolerance<float>(k, static_cast<float>(k) + 1.0f);
  for (Index e = 0; e < size; ++e)
    ASSERT_NEAR(a[static_cast<size_t>(e)], b[static_cast<size_t>(e)], tol) << what << " at " << e;
}

constexpr Index kRows[] = {0, 1, 2, 3, 5, 13, 32};
constexpr Index kWidths[] = {0, 1, 2, 3, 4, 5, 7, 8, 13, 17};

TEST(Lanes, ForwardMatchesRef) {
  RngStream rng(7, 1);
  for (Index n : kRows)
    for (Index i : kWidths)
      for (Index o : kWidths) {
        const auto x = random_lanes(n, i, rng), w = random_lanes(o, i, rng),
                   b = random_lanes(1, o, rng);
        for (int variant = 0; variant < 4; ++variant) {
          const bool relu = variant & 1;
          const float* bias = variant & 2 ? b.data() : nullptr;
          std::vector<float> y(static_cast<size_t>(lanes_size(n, o)) + 1, 99.0f), y_ref = y;
          lanes_linear_forward(x.data(), w.data(), bias, n, i, o, relu, y.data());
          lanes_linear_forward_ref(x.data(), w.data(), bias, n, i, o, relu, y_ref.data());
          expect_close(y, y_ref, lanes_size(n, o), i,
                       fmt::format("fwd n={} i={} o={} variant={}", n, i, o, variant));
          ASSERT_EQ(y.back(), 99.0f) << "wrote past the end";
        }
      }
}

TEST(Lanes, BackwardMatchesRef) {
  RngStream rng(7, 2);
  for (Index n : kRows)
    for (Index i : kWidths)
      for (Index o : kWidths)
        for (int variant = 0; variant < 4; ++variant) {
          const bool relu = variant & 1, accumulate = variant & 2;
          const auto x = random_lanes(n, i, rng), w = random_lanes(o, i, rng),
                     y = random_lanes(n, o, rng), dy = random_lanes(n, o, rng);
          auto dw = random_lanes(o, i, rng), db = random_lanes(1, o, rng);
          auto dw_ref = dw, db_ref = db;
          std::vector<float> dz(static_cast<size_t>(lanes_size(n, o)) + 1), dz_ref = dz;
          std::vector<float> dx(static_cast<size_t>(lanes_size(n, i)) + 1, 99.0f), dx_ref = dx;
          lanes_linear_backward(x.data(), w.data(), y.data(), relu, dy.data(), dz.data(), dx.data(),
                                dw.data(), db.data(), n, i, o, accumulate);
          lanes_linear_backward_ref(x.data(), w.data(), y.data(), relu, dy.data(), dz_ref.data(),
                                    dx_ref.data(), dw_ref.data(), db_ref.data(), n, i, o,
                                    accumulate);
          const std::string what =
              fmt::format("bwd n={} i={} o={} relu={} acc={}", n, i, o, relu, accumulate);
          expect_close(dx, dx_ref, lanes_size(n, i), o, "dx " + what);
          expect_close(dw, dw_ref, lanes_size(o, i), n + 1, "dw " + what);
          expect_close(db, db_ref, lanes_size(1, o), n + 1, "db " + what);
          ASSERT_EQ(dx.back(), 99.0f) << "dx written past the end, " << what;
        }
}

TEST(Lanes, BackwardWithoutDxOrBias) {
  RngStream rng(7, 3);
  const Index n = 9, i = 5, o = 3;
  const auto x = random_lanes(n, i, rng), w = random_lanes(o, i, rng), y = random_lanes(n, o, rng),
             dy = random_lanes(n, o, rng);
  std::vector<float> dz(static_cast<size_t>(lanes_size(n, o))), dz_ref = dz;
  std::vector<float> dw(static_cast<size_t>(lanes_size(o, i))), dw_ref = dw;
  lanes_linear_backward(x.data(), w.data(), y.data(), true, dy.data(), dz.data(), nullptr,
                        dw.data(), nullptr, n, i, o, false);
  lanes_linear_backward_ref(x.data(), w.data(), y.data(), true, dy.data(), dz_ref.data(), nullptr,
                            dw_ref.data(), nullptr, n, i, o, false);
  expect_close(dw, dw_ref, lanes_size(o, i), n, "dw");
}

// Unpacked per-model matrices of a lane buffer.
std::array<std::vector<float>, kLanes> unpack_all(const std::vector<float>& src, Index rows,
                                                  Index cols) {
  std::array<std::vector<float>, kLanes> out;
  std::vector<MatView<float>> views;
  for (auto& m : out) {
    m.assign(static_cast<size_t>(rows * cols) + 1, 0.0f);
    views.emplace_back(m.data(), rows, cols);
  }
  lanes_unpack(src.data(), views);
  return out;
}

// The reference's meaning: each lane is the per-model Linear of gemm.h.
TEST(Lanes, RefEqualsPerModelLinear) {
  RngStream rng(7, 4);
  const Index n = 6, i = 5, o = 3;
  const auto x = random_lanes(n, i, rng), w = random_lanes(o, i, rng), b = random_lanes(1, o, rng),
             dy = random_lanes(n, o, rng);
  std::vector<float> y(static_cast<size_t>(lanes_size(n, o))), dz = y;
  std::vector<float> dx(static_cast<size_t>(lanes_size(n, i))), dw(w.size()), db(b.size());
  lanes_linear_forward_ref(x.data(), w.data(), b.data(), n, i, o, true, y.data());
  lanes_linear_backward_ref(x.data(), w.data(), y.data(), true, dy.data(), dz.data(), dx.data(),
                            dw.data(), db.data(), n, i, o, false);
  const auto xs = unpack_all(x, n, i), ws = unpack_all(w, o, i), bs = unpack_all(b, 1, o),
             dys = unpack_all(dy, n, o), ys = unpack_all(y, n, o), dxs = unpack_all(dx, n, i),
             dws = unpack_all(dw, o, i), dbs = unpack_all(db, 1, o);
  for (Index l = 0; l < kLanes; ++l) {
    const auto k = static_cast<size_t>(l);
    std::vector<float> ym(static_cast<size_t>(n * o)), dzm = ym, dxm(static_cast<size_t>(n * i));
    std::vector<float> dwm(static_cast<size_t>(o * i)), dbm(static_cast<size_t>(o));
    linear_forward_ref<float>({xs[k].data(), n, i}, {ws[k].data(), o, i}, bs[k].data(), Act::kRelu,
                              {ym.data(), n, o}, {});
    linear_backward_ref<float>({xs[k].data(), n, i}, {ws[k].data(), o, i}, {ym.data(), n, o},
                               Act::kRelu, {dys[k].data(), n, o}, {dzm.data(), n, o},
                               {dxm.data(), n, i}, {dwm.data(), o, i}, dbm.data(), false);
    for (Index e = 0; e < n * o; ++e) EXPECT_NEAR(ys[k][size_t(e)], ym[size_t(e)], 1e-5) << l;
    for (Index e = 0; e < n * i; ++e) EXPECT_NEAR(dxs[k][size_t(e)], dxm[size_t(e)], 1e-5) << l;
    for (Index e = 0; e < o * i; ++e) EXPECT_NEAR(dws[k][size_t(e)], dwm[size_t(e)], 1e-5) << l;
    for (Index e = 0; e < o; ++e) EXPECT_NEAR(dbs[k][size_t(e)], dbm[size_t(e)], 1e-5) << l;
  }
}

TEST(Lanes, PackUnpackRoundTrip) {
  RngStream rng(7, 5);
  for (Index models : {1, 3, 8})
    for (Index rows : {0, 1, 4})
      for (Index cols : {1, 3, 9}) {
        // Sources with a padded leading dimension: pack must honour ld.
        std::vector<testing::TestMat<float>> src;
        std::vector<ConstMat<float>> views;
        for (Index m = 0; m < models; ++m) {
          src.emplace_back(rows, cols, /*pad=*/2, /*offset=*/1);
          src.back().fill_random(rng);
        }
        for (auto& s : src) views.push_back(s.cview());
        std::vector<float> packed(static_cast<size_t>(lanes_size(rows, cols)) + 1, 99.0f);
        lanes_pack(views, packed.data());
        for (Index r = 0; r < rows; ++r)
          for (Index c = 0; c < cols; ++c)
            for (Index l = 0; l < kLanes; ++l) {
              const float want = l < models ? views[size_t(l)](r, c) : 0.0f;
              ASSERT_EQ(packed[size_t((r * cols + c) * kLanes + l)], want);
            }
        EXPECT_EQ(packed.back(), 99.0f);
        std::vector<testing::TestMat<float>> back;
        std::vector<MatView<float>> out;
        for (Index m = 0; m < models; ++m) back.emplace_back(rows, cols, 1, 0);
        for (auto& b : back) out.push_back(b.view);
        lanes_unpack(packed.data(), out);
        for (Index m = 0; m < models; ++m)
          for (Index r = 0; r < rows; ++r)
            for (Index c = 0; c < cols; ++c)
              ASSERT_EQ(out[size_t(m)](r, c), views[size_t(m)](r, c));
      }
}

TEST(Lanes, PackMatchesRef) {
  RngStream rng(7, 6);
  for (Index models : {7, 8})
    for (Index rows : {0, 1, 3})
      for (Index cols : {1, 7, 8, 9, 16, 21}) {
        std::vector<testing::TestMat<float>> src;
        std::vector<ConstMat<float>> views;
        for (Index m = 0; m < models; ++m) {
          src.emplace_back(rows, cols, /*pad=*/3, /*offset=*/1);
          src.back().fill_random(rng);
        }
        for (auto& s : src) views.push_back(s.cview());
        std::vector<float> fast(static_cast<size_t>(lanes_size(rows, cols)) + 1, 99.0f), ref = fast;
        lanes_pack(views, fast.data());
        lanes_pack_ref(views, ref.data());
        ASSERT_EQ(fast, ref) << models << " models [" << rows << ", " << cols << "]";
      }
}

TEST(Lanes, PackRejectsMismatchedShapes) {
  std::vector<float> a(6), b(8), dst(64);
  const std::vector<ConstMat<float>> src = {{a.data(), 2, 3}, {b.data(), 2, 4}};
  EXPECT_THROW(lanes_pack(src, dst.data()), Error);
  const std::vector<ConstMat<float>> nine(9, ConstMat<float>(a.data(), 2, 3));
  EXPECT_THROW(lanes_pack(nine, dst.data()), Error);
}

}  // namespace lanes_test
}  // namespace shoal::kernels
