// FLOP and byte counts against their closed forms, per layer and through the models' zones.
#include <gtest/gtest.h>

#include "shoal/models/mlp.h"
#include "shoal/profile/cost.h"
#include "shoal/profile/recorder.h"

namespace shoal::profile {
namespace cost_test {

TEST(Cost, LinearMatchesClosedForms) {
  const double n = 64, i = 784, o = 256, e = 4;
  const Cost f = linear_forward(n, i, o, true, ActKind::kRelu);
  EXPECT_EQ(f.flops, 2 * n * i * o + n * o + n * o);
  EXPECT_EQ(f.bytes, e * (n * i + o * i + o + n * o));
  const Cost dx = linear_backward_dx(n, i, o, ActKind::kNone);
  EXPECT_EQ(dx.flops, 2 * n * i * o);
  EXPECT_EQ(dx.bytes, e * (n * o + o * i + n * i));
  const Cost dw = linear_backward_dw(n, i, o, true);
  EXPECT_EQ(dw.flops, 2 * n * i * o + n * o);
  EXPECT_EQ(dw.bytes, e * (n * o + n * i + 2 * o * i + 2 * o));
  EXPECT_EQ(linear_forward(n, i, o, false, ActKind::kNone).flops, 2 * n * i * o);
  EXPECT_EQ(linear_forward(n, i, o, false, ActKind::kGelu, 8).bytes,
            8 * (n * i + o * i + 2 * n * o));
}

TEST(Cost, NormsElementwiseLossesAndOptimizers) {
  const double n = 32, f = 48;
  EXPECT_EQ(layer_norm_forward(n, f, true).flops, 8 * n * f);
  EXPECT_EQ(layer_norm_backward_dx(n, f).flops, 10 * n * f);
  EXPECT_EQ(layer_norm_backward_dw(n, f, true).flops, 3 * n * f);
  EXPECT_EQ(layer_norm_backward_dw(n, f, false), Cost{});
  EXPECT_EQ(batch_norm_forward(n, f, true).flops, 8 * n * f);
  EXPECT_EQ(elementwise(n, f, 1, 2), (Cost{n * f, 4 * 3 * n * f}));
  EXPECT_EQ(dropout(n, f), (Cost{n * f, 4 * 2 * n * f}));
  EXPECT_EQ(embedding_forward(n, f).flops, 0);
  EXPECT_EQ(point_loss_forward(n, f), (Cost{3 * n * f, 4 * 2 * n * f}));
  EXPECT_EQ(point_loss_backward(n, f), (Cost{2 * n * f, 4 * 3 * n * f}));
  EXPECT_EQ(adam_update(1000), (Cost{13000, 4 * 7000}));
  EXPECT_EQ(adam_update(1000, true), (Cost{14000, 4 * 9000}));
  EXPECT_EQ(sgd_update(10, true), (Cost{40, 4 * 50}));
  EXPECT_EQ(grad_reduce(100, 3), (Cost{200, 4 * 800}));
  EXPECT_EQ(grad_reduce(100, 1), Cost{});
}

TEST(Cost, AffineDecompositionIsExact) {
  const AffineCost a =
      AffineCost::of([](double n) { return linear_forward(n, 10, 7, true, ActKind::kRelu); });
  for (double n : {0.0, 1.0, 5.0, 64.0, 1280.0}) {
    EXPECT_EQ(a.at(n), linear_forward(n, 10, 7, true, ActKind::kRelu)) << n;
  }
}

TEST(Cost, MlpZonesCarryTheClosedForms) {
  models::Mlp<float> mlp({.in = 784, .hidden = {256}, .out = 10});
  RecorderConfig cfg;
  cfg.max_threads = 1;
  Recorder rec(cfg);
  mlp.register_zones(rec, 0, "m.");
  const auto& z = rec.zones();
  ASSERT_EQ(z.size(), 5u);  // the step zone + 2 layers × forward, backward
  const double n = 64;
  EXPECT_EQ(z[1].name, "m.layers.0.forward");
  EXPECT_EQ(z[1].cost.at(n).flops, 2 * n * 784 * 256 + 2 * n * 256);  // GEMM, bias, ReLU
  EXPECT_EQ(z[2].name, "m.layers.0.backward");
  // Layer 0 computes no input gradient: dW (GEMM + db) and the ReLU derivative.
  EXPECT_EQ(z[2].cost.at(n).flops, 2 * n * 784 * 256 + n * 256 + n * 256);
  EXPECT_EQ(z[3].cost.at(n).flops, 2 * n * 256 * 10 + n * 10);
  // Layer 1: dX (GEMM) + dW (GEMM + db).
  EXPECT_EQ(z[4].cost.at(n).flops, 2 * n * 256 * 10 + 2 * n * 256 * 10 + n * 10);
}

}  // namespace cost_test
}  // namespace shoal::profile
