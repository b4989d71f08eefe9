// Fused linear_forward / linear_backward against their *_ref twins, and a check that the
// steady state allocates nothing.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <cmath>
#include <cstdlib>

#include "kernel_test_util.h"
#include "shoal/kernels/gemm.h"
#include "support/alloc_counter.h"

namespace shoal::kernels {
namespace linear_kernels_test {

using testing::TestMat;

struct LinearCase {
  Act act;
  bool bias;
  bool accumulate;
  bool dbl;
  Index pad;
  Index offset;
};

std::string case_name(const ::testing::TestParamInfo<LinearCase>& info) {
  const LinearCase& c = info.param;
  const char* act = c.act == Act::kNone ? "none" : c.act == Act::kRelu ? "relu" : "gelu";
  return fmt::format("{}_{}_{}_{}_pad{}_off{}", act, c.bias ? "bias" : "nobias",
                     c.accumulate ? "acc" : "overwrite", testing::type_name(c.dbl), c.pad,
                     c.offset);
}

template <class T>
void expect_close(ConstMat<T> got, ConstMat<T> want, Index k, const char* what, Index n, Index in,
                  Index out) {
  // Inputs are in [-1, 1]: a length-k dot has rounding around √k·k·eps; allow k·eps·(√k + 1)
  // with a safety factor. An indexing bug gives errors of order 1.
  const T tol =
      T(8) * static_cast<T>(k + 2) * testing::eps<T>() * (std::sqrt(static_cast<T>(k)) + T(1));
  for (Index i = 0; i < want.rows; ++i)
    for (Index j = 0; j < want.cols; ++j)
      ASSERT_NEAR(got(i, j), want(i, j), tol * (T(1) + std::abs(want(i, j))))
          << what << " at (" << i << "," << j << ") N=" << n << " I=" << in << " O=" << out;
}

template <class T>
void check_linear(const LinearCase& p, const std::vector<Index>& ns, const std::vector<Index>& ins,
                  const std::vector<Index>& outs) {
  RngStream rng(3, 4);
  for (Index n : ns)
    for (Index in : ins)
      for (Index out : outs) {
        TestMat<T> x(n, in, p.pad, p.offset), w(out, in, p.pad, p.offset);
        x.fill_random(rng);
        w.fill_random(rng);
        std::vector<T> b(static_cast<size_t>(out) + 1);
        for (auto& v : b) v = static_cast<T>(rng.uniform(-1, 1));
        const T* bp = p.bias ? b.data() + 1 : nullptr;
        TestMat<T> y(n, out, p.pad, p.offset), y_ref(n, out, p.pad, p.offset);
        TestMat<T> pre(n, out, p.pad, p.offset), pre_ref(n, out, p.pad, p.offset);
        y.fill(std::numeric_limits<T>::quiet_NaN());
        y_ref.fill(std::numeric_limits<T>::quiet_NaN());
        const bool want_pre = p.act == Act::kGelu;
        linear_forward<T>(x.view, w.view, bp, p.act, y.view, want_pre ? pre.view : MatView<T>{});
        linear_forward_ref<T>(x.view, w.view, bp, p.act, y_ref.view,
                              want_pre ? pre_ref.view : MatView<T>{});
        expect_close<T>(y.view, y_ref.view, in, "y", n, in, out);
        if (want_pre) expect_close<T>(pre.view, pre_ref.view, in, "pre", n, in, out);

        TestMat<T> dy(n, out, p.pad, p.offset), dz(n, out, p.pad, p.offset);
        TestMat<T> dz_ref(n, out, p.pad, p.offset);
        dy.fill_random(rng);
        TestMat<T> dx(n, in, p.pad, p.offset), dx_ref(n, in, p.pad, p.offset);
        dx.fill(std::numeric_limits<T>::quiet_NaN());
        dx_ref.fill(std::numeric_limits<T>::quiet_NaN());
        TestMat<T> dw(out, in, p.pad, p.offset);
        if (p.accumulate) {
          dw.fill_random(rng);
        } else {
          dw.fill(std::numeric_limits<T>::quiet_NaN());
        }
        TestMat<T> dw_ref = dw;
        dw_ref.view.data = dw_ref.storage.data() + p.offset;
        std::vector<T> db(b.size()), db_ref;
        for (auto& v : db)
          v = p.accumulate ? static_cast<T>(rng.uniform(-1, 1))
                           : std::numeric_limits<T>::quiet_NaN();
        db_ref = db;
        ConstMat<T> saved = want_pre ? pre_ref.cview() : y_ref.cview();
        linear_backward<T>(x.view, w.view, saved, p.act, dy.view, dz.view, dx.view, dw.view,
                           p.bias ? db.data() + 1 : nullptr, p.accumulate);
        linear_backward_ref<T>(x.view, w.view, saved, p.act, dy.view, dz_ref.view, dx_ref.view,
                               dw_ref.view, p.bias ? db_ref.data() + 1 : nullptr, p.accumulate);
        expect_close<T>(dx.view, dx_ref.view, out, "dx", n, in, out);
        expect_close<T>(dw.view, dw_ref.view, n, "dw", n, in, out);
        if (p.bias)
          expect_close<T>(ConstMat<T>(db.data() + 1, 1, out),
                          ConstMat<T>(db_ref.data() + 1, 1, out), n, "db", n, in, out);
      }
}

class LinearKernelTest : public ::testing::TestWithParam<LinearCase> {};

TEST_P(LinearKernelTest, MatchesReference) {
  const std::vector<Index> ns{0, 1, 8, 9, 63, 64, 65, 130}, widths{0, 1, 7, 8, 9, 17};
  if (GetParam().dbl)
    check_linear<double>(GetParam(), ns, widths, widths);
  else
    check_linear<float>(GetParam(), ns, widths, widths);
}

// The float backward's register tiles are 4 rows × 24 columns with masked column tails: widths
// around 8, 16, 24, 48 and the bench shapes, output counts around multiples of 4.
TEST_P(LinearKernelTest, MatchesReferenceTileEdges) {
  const std::vector<Index> ns{1, 3, 127, 200}, ins{15, 16, 23, 24, 25, 47, 49, 85};
  const std::vector<Index> outs{2, 3, 4, 5, 31, 32, 33, 64};
  if (GetParam().dbl)
    check_linear<double>(GetParam(), {3, 65}, ins, outs);
  else
    check_linear<float>(GetParam(), ns, ins, outs);
}

// Layers whose weight outgrows L2 (I·O > 2¹⁶) run as whole-batch GEMMs: both sides of the
// threshold, odd widths.
TEST_P(LinearKernelTest, MatchesReferenceWideLayers) {
#if defined(__SANITIZE_ADDRESS__)
  // Under ASan (tens of times slower) the threshold's two sides and an odd width suffice.
  if (GetParam().dbl)
    check_linear<double>(GetParam(), {3}, {256, 257}, {255, 256});
  else
    check_linear<float>(GetParam(), {9}, {256, 257}, {255, 261});
#else
  if (GetParam().dbl)
    check_linear<double>(GetParam(), {3, 65}, {256, 257}, {255, 256, 261});
  else
    check_linear<float>(GetParam(), {1, 9, 130}, {256, 257, 300}, {255, 256, 261});
#endif
}

std::vector<LinearCase> all_cases() {
  std::vector<LinearCase> cases;
  for (Act act : {Act::kNone, Act::kRelu, Act::kGelu})
    for (bool bias : {false, true})
      for (bool acc : {false, true})
        for (bool dbl : {false, true}) {
          cases.push_back({act, bias, acc, dbl, 0, 0});
          cases.push_back({act, bias, acc, dbl, 3, 1});
        }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Variants, LinearKernelTest, ::testing::ValuesIn(all_cases()), case_name);

// dx narrower than x (NCF's first layer: no gradient for the context columns): only the leading
// dx.cols columns are written, equal to the full product's, and the rest of the row is left.
template <class T>
void check_narrow_dx() {
  RngStream rng(11, 12);
  for (Index n : {1, 9, 130})
    for (Index in : {9, 24, 85})
      for (Index out : {1, 8, 13, 32})
        for (Index dxc : {Index{1}, Index{8}, in - 1, in}) {
          TestMat<T> x(n, in, 2, 1), w(out, in, 0, 0), y(n, out, 0, 0), dy(n, out, 0, 0);
          TestMat<T> dz(n, out, 0, 0), dw(out, in, 0, 0), dw_ref(out, in, 0, 0);
          TestMat<T> dx(n, in, 3, 1), dx_ref(n, in, 0, 0), dz_ref(n, out, 0, 0);
          x.fill_random(rng);
          w.fill_random(rng);
          y.fill_random(rng);
          dy.fill_random(rng);
          const T guard = T(4321);
          dx.fill(guard);
          std::vector<T> db(static_cast<size_t>(out)), db_ref(static_cast<size_t>(out));
          linear_backward<T>(x.view, w.view, y.view, Act::kRelu, dy.view, dz.view,
                             dx.view.cols_block(0, dxc), dw.view, db.data(), false);
          linear_backward_ref<T>(x.view, w.view, y.view, Act::kRelu, dy.view, dz_ref.view,
                                 dx_ref.view, dw_ref.view, db_ref.data(), false);
          expect_close<T>(ConstMat<T>(dx.view.cols_block(0, dxc)),
                          ConstMat<T>(dx_ref.view.cols_block(0, dxc)), out, "dx", n, in, out);
          expect_close<T>(dw.view, dw_ref.view, n, "dw", n, in, out);
          for (Index i = 0; i < n; ++i)
            for (Index j = dxc; j < dx.view.ld; ++j)
              ASSERT_EQ(dx.view.data[i * dx.view.ld + j], guard)
                  << "dx column " << j << " written, dx.cols=" << dxc << " N=" << n << " I=" << in
                  << " O=" << out;
        }
}

TEST(LinearKernelNarrowDx, WritesOnlyItsColumns) {
  check_narrow_dx<float>();
  check_narrow_dx<double>();
}

TEST(LinearKernelAlloc, SteadyStateAllocatesNothing) {
  const Index n = 200, in = 85, out = 32;
  RngStream rng(9, 9);
  TestMat<float> x(n, in, 0, 0), w(out, in, 0, 0), y(n, out, 0, 0), pre(n, out, 0, 0);
  TestMat<float> dy(n, out, 0, 0), dz(n, out, 0, 0), dx(n, in, 0, 0), dw(out, in, 0, 0);
  TestMat<float> wide(n, 2 * in, 0, 0);  // a strided view, as concat produces
  std::vector<float> b(out), db(out);
  x.fill_random(rng);
  w.fill_random(rng);
  dy.fill_random(rng);
  auto step = [&] {
    for (Act act : {Act::kRelu, Act::kGelu}) {
      linear_forward<float>(x.view, w.view, b.data(), act, y.view, pre.view);
      linear_backward<float>(x.view, w.view, act == Act::kRelu ? y.cview() : pre.cview(), act,
                             dy.view, dz.view, dx.view, dw.view, db.data(), true);
      linear_forward<float>(wide.view.cols_block(in, in), w.view, b.data(), act, y.view, pre.view);
    }
    gemm<float>(Trans::kYes, Trans::kNo, in, in, n, 1.0f, x.view.data, in, x.view.data, in, 0.0f,
                wide.view.data, 2 * in);
  };
  step();  // warm-up: JIT kernels, scratch buffers
  shoal::testing::AllocCounter counter;
  for (int i = 0; i < 3; ++i) step();
  EXPECT_EQ(counter.count(), 0) << "heap allocations in the steady state";
}

}  // namespace linear_kernels_test
}  // namespace shoal::kernels
