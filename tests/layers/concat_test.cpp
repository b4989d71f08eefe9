// Concat and split without copies. There is no concat layer: the model plans one [N, O1 + O2]
// activation h and hands each producer its column block,
//     h[:, 0:O1]  = Linear1(x1)          (a MatView with ld = O1 + O2)
//     h[:, O1: ]  = Linear2(x2)
//     y           = Linear3(h)           (reads the whole buffer)
// and backward mirrors it on the activation-grad buffer dh of the same shape: Linear3 writes
// all of dh, and each producer's backward reads its own column block of h (its saved output)
// and of dh (its dy). The split is the same views read the other way. This test checks that
// composition against central differences, so any kernel that assumed ld == cols, or wrote
// outside its block, fails here.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shoal/layers/linear.h"
#include "support/gradcheck.h"

namespace shoal {
namespace concat_test {

using layers::Act;
using layers::Linear;

struct ConcatCase {
  Index n, i1, i2, o1, o2, o3;
};

std::string concat_name(const ::testing::TestParamInfo<ConcatCase>& info) {
  const auto& c = info.param;
  return fmt::format("n{}_i{}x{}_h{}x{}_o{}", c.n, c.i1, c.i2, c.o1, c.o2, c.o3);
}

class ConcatGrad : public ::testing::TestWithParam<ConcatCase> {};

TEST_P(ConcatGrad, TwoLinearsIntoColumnBlocksMatchCentralDifferences) {
  const auto c = GetParam();
  const Index h_cols = c.o1 + c.o2;
  // ReLU on the first producer (backward reads its output block of h), GELU on the second
  // (backward reads its own saved pre-activation): both paths of Linear meet strided views.
  Linear<double> l1({.in = c.i1, .out = c.o1, .act = Act::kRelu});
  Linear<double> l2({.in = c.i2, .out = c.o2, .act = Act::kGelu});
  Linear<double> l3({.in = h_cols, .out = c.o3});
  Buffer<double> x1, x2, h, y, dy, dh, dx1, dx2;
  Planner planner;
  planner.push_scope("l1.");
  l1.plan(planner, c.n);
  planner.pop_scope();
  planner.push_scope("l2.");
  l2.plan(planner, c.n);
  planner.pop_scope();
  planner.push_scope("l3.");
  l3.plan(planner, c.n);
  planner.pop_scope();
  planner.buffer(x1, Region::kActivations, "x1", {c.n, c.i1});
  planner.buffer(x2, Region::kActivations, "x2", {c.n, c.i2});
  planner.buffer(h, Region::kActivations, "h", {c.n, h_cols});
  planner.buffer(y, Region::kActivations, "y", {c.n, c.o3});
  planner.buffer(dy, Region::kActivationGrads, "dy", {c.n, c.o3});
  planner.buffer(dh, Region::kActivationGrads, "dh", {c.n, h_cols});
  planner.buffer(dx1, Region::kActivationGrads, "dx1", {c.n, c.i1});
  planner.buffer(dx2, Region::kActivationGrads, "dx2", {c.n, c.i2});
  Arena arena(std::move(planner));
  RngStream rng(1, 2);
  l1.init(rng);
  l2.init(rng);
  l3.init(rng);
  testing::fill_uniform(x1.view.data, x1.view.numel(), 3);
  testing::fill_uniform(x2.view.data, x2.view.numel(), 4);

  const MatView<double> h1 = h.mat().cols_block(0, c.o1), h2 = h.mat().cols_block(c.o1, c.o2);
  const MatView<double> dh1 = dh.mat().cols_block(0, c.o1);
  const MatView<double> dh2 = dh.mat().cols_block(c.o1, c.o2);
  const Ctx ctx;
  std::vector<testing::GradVar> vars = {
      {"x1", x1.view.data, dx1.view.data, x1.view.numel(), false},
      {"x2", x2.view.data, dx2.view.data, x2.view.numel(), false}};
  for (auto [name, layer] : {std::pair{"l1.", &l1}, {"l2.", &l2}, {"l3.", &l3}})
    layer->for_each_param([&](std::string_view pname, Param<double>& p) {
      vars.push_back(
          {fmt::format("{}{}", name, pname), p.value.data, p.grad.data, p.value.numel(), true});
    });
  auto res = testing::gradcheck(
      vars, {{y.view.data, dy.view.data, y.view.numel()}},
      [&] {
        l1.forward(ctx, x1.mat(), h1);
        l2.forward(ctx, x2.mat(), h2);
        l3.forward(ctx, h.mat(), y.mat());
      },
      [&] {
        l3.backward(ctx, h.mat(), y.mat(), dy.mat(), dh.mat());
        l2.backward(ctx, x2.mat(), h2, dh2, dx2.mat());
        l1.backward(ctx, x1.mat(), h1, dh1, dx1.mat());
      });
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
  EXPECT_EQ(vars.size(), 8u) << "x1, x2 and weight + bias of three layers";
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConcatGrad,
                         ::testing::Values(ConcatCase{1, 1, 1, 1, 1, 1},
                                           ConcatCase{1, 7, 9, 8, 7, 3},
                                           ConcatCase{3, 8, 15, 9, 16, 7},
                                           ConcatCase{5, 17, 7, 15, 17, 9},
                                           ConcatCase{2, 16, 8, 16, 1, 17}),
                         concat_name);

// The producers' outputs land in their blocks, side by side, without any copy.
TEST(Concat, ProducersFillTheirColumnBlocks) {
  Linear<double> l1({.in = 2, .out = 3, .bias = false});
  Linear<double> l2({.in = 2, .out = 2, .bias = false});
  Buffer<double> x, h;
  Planner planner;
  planner.push_scope("l1.");
  l1.plan(planner, 1);
  planner.pop_scope();
  planner.push_scope("l2.");
  l2.plan(planner, 1);
  planner.pop_scope();
  planner.buffer(x, Region::kActivations, "x", {1, 2});
  planner.buffer(h, Region::kActivations, "h", {1, 5});
  Arena arena(std::move(planner));
  x.view.data[0] = 1.0;
  x.view.data[1] = 10.0;
  // W1 rows (1,0), (0,1), (1,1); W2 rows (2,0), (0,2).
  const double w1[] = {1, 0, 0, 1, 1, 1}, w2[] = {2, 0, 0, 2};
  std::copy(std::begin(w1), std::end(w1), l1.p.weight.value.data);
  std::copy(std::begin(w2), std::end(w2), l2.p.weight.value.data);
  l1.forward(Ctx{}, x.mat(), h.mat().cols_block(0, 3));
  l2.forward(Ctx{}, x.mat(), h.mat().cols_block(3, 2));
  EXPECT_EQ(std::vector<double>(h.view.begin(), h.view.end()),
            (std::vector<double>{1, 10, 11, 2, 20}));
}

}  // namespace concat_test
}  // namespace shoal
