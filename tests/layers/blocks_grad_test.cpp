// Gradient checks (double, central differences) of the NBEATS / NBEATSx / NHITS / TiDE blocks,
// every one on column-block views (ld > cols) so that no block touches memory outside a view.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "shoal/layers/interpolate1d.h"
#include "shoal/layers/mlp_residual.h"
#include "shoal/layers/nbeats_basis.h"
#include "shoal/layers/pointwise.h"
#include "shoal/layers/pool1d.h"
#include "support/gradcheck.h"

namespace shoal {
namespace blocks_grad_test {

using testing::GradcheckResult;
using testing::GradVar;

constexpr double kTol = 1e-6;

// A [rows, cols] matrix inside a zeroed [rows, cols + 3] buffer. The gradient checks run over
// the whole buffer, so a block that reads dy's padding (the check fills it), or writes y's or
// dx's padding, fails them; padding_zero() says the outputs' padding is still untouched.
struct Padded {
  Index rows, cols;
  std::vector<double> buf;
  Padded(Index r, Index c) : rows(r), cols(c), buf(static_cast<size_t>(r * (c + 3)), 0.0) {}
  MatView<double> view() { return {buf.data(), rows, cols, cols + 3}; }
  void fill(uint64_t seed, double lo = -1, double hi = 1) {
    for (Index i = 0; i < rows; ++i)
      testing::fill_uniform(view().row(i), cols, seed + static_cast<uint64_t>(i), lo, hi);
  }
  bool padding_intact() const {
    for (Index i = 0; i < rows; ++i)
      for (Index j = cols; j < cols + 3; ++j)
        if (buf[static_cast<size_t>(i * (cols + 3) + j)] != 0.0) return false;
    return true;
  }
  double* data() { return buf.data(); }
};

template <class Layer>
GradcheckResult check_pointwise(Layer layer, Index n, Index f, double lo, double hi) {
  Padded x(n, f), y(n, f), dy(n, f), dx(n, f);
  x.fill(11, lo, hi);
  // Keep away from the kinks (x = 0 for SELU, LeakyReLU; x = 20 for Softplus).
  for (Index r = 0; r < n; ++r)
    for (Index c = 0; c < f; ++c) {
      double& v = x.view()(r, c);
      if (std::abs(v) < 0.05) v = 0.05;
      if (std::abs(v - 20) < 0.05) v = 20.1;
    }
  const Ctx ctx;
  auto res = testing::gradcheck(
      {{"x", x.view().data, dx.view().data, n * (f + 3) - 3, false}},
      {{y.view().data, dy.view().data, n * (f + 3) - 3}},
      [&] { layer.forward(ctx, x.view(), y.view()); },
      [&] { layer.backward(ctx, x.view(), y.view(), dy.view(), dx.view()); });
  EXPECT_TRUE(x.padding_intact() && dx.padding_intact());
  return res;
}

TEST(BlocksGrad, PointwiseActivations) {
  for (auto [n, f] : {std::pair<Index, Index>{1, 1}, {3, 7}, {4, 16}}) {
    EXPECT_LE(check_pointwise(layers::Softplus<double>(), n, f, -4, 4).max_rel_error, kTol);
    EXPECT_LE(check_pointwise(layers::Softplus<double>(), n, f, 18, 22).max_rel_error, kTol);
    EXPECT_LE(check_pointwise(layers::Tanh<double>(), n, f, -3, 3).max_rel_error, kTol);
    EXPECT_LE(check_pointwise(layers::SELU<double>(), n, f, -3, 3).max_rel_error, kTol);
    EXPECT_LE(check_pointwise(layers::LeakyReLU<double>({.negative_slope = 0.2}), n, f, -3, 3)
                  .max_rel_error,
              kTol);
    EXPECT_LE(check_pointwise(layers::Sigmoid<double>(), n, f, -5, 5).max_rel_error, kTol);
  }
}

TEST(BlocksGrad, PReLU) {
  for (auto [n, f] : {std::pair<Index, Index>{1, 1}, {3, 7}, {5, 9}}) {
    layers::PReLU<double> prelu;
    Planner planner;
    prelu.plan(planner, n);
    Arena arena(std::move(planner));
    RngStream rng(1, 0);
    prelu.init(rng);
    EXPECT_EQ(prelu.p.weight.value.data[0], 0.25);
    prelu.p.weight.value.data[0] = 0.3;
    Padded x(n, f), y(n, f), dy(n, f), dx(n, f);
    x.fill(5, -2, 2);
    for (Index r = 0; r < n; ++r)
      for (Index c = 0; c < f; ++c)
        if (std::abs(x.view()(r, c)) < 0.05) x.view()(r, c) = -0.05;
    const Ctx ctx;
    const Index len = n * (f + 3) - 3;
    const auto res = testing::gradcheck(
        {{"x", x.data(), dx.data(), len, false},
         {"weight", prelu.p.weight.value.data, prelu.p.weight.grad.data, 1, true}},
        {{y.data(), dy.data(), len}}, [&] { prelu.forward(ctx, x.view(), y.view()); },
        [&] { prelu.backward(ctx, x.view(), y.view(), dy.view(), dx.view()); });
    EXPECT_LE(res.max_rel_error, kTol) << res.worst;
    EXPECT_TRUE(dx.padding_intact() && y.padding_intact());
  }
}

TEST(BlocksGrad, Pooling) {
  for (auto mode : {layers::PoolMode::kMax, layers::PoolMode::kAvg})
    for (Index L : {1, 5, 8, 13})
      for (Index k : {1, 2, 3, 4, 16}) {
        layers::Pool1d<double> pool({.length = L, .kernel_size = k, .mode = mode});
        const Index P = pool.out_length(), n = 3;
        EXPECT_EQ(P, (L + k - 1) / k);
        Padded x(n, L), y(n, P), dy(n, P), dx(n, L);
        x.fill(21);  // distinct values: the argmax is stable under ±ε
        const Ctx ctx;
        const auto res = testing::gradcheck(
            {{"x", x.data(), dx.data(), n * (L + 3) - 3, false}},
            {{y.data(), dy.data(), n * (P + 3) - 3}},
            [&] { pool.forward(ctx, x.view(), y.view()); },
            [&] { pool.backward(ctx, x.view(), y.view(), dy.view(), dx.view()); });
        EXPECT_LE(res.max_rel_error, kTol) << "L=" << L << " k=" << k << " " << res.worst;
        EXPECT_TRUE(y.padding_intact() && dx.padding_intact()) << "L=" << L << " k=" << k;
      }
}

TEST(BlocksGrad, Interpolation) {
  for (auto mode : {layers::InterpMode::kLinear, layers::InterpMode::kNearest})
    for (Index K : {1, 2, 3, 5, 12})
      for (Index H : {1, 4, 7, 12, 24}) {
        layers::Interpolate1d<double> interp({.in_size = K, .out_size = H, .mode = mode});
        const Index n = 2;
        Padded x(n, K), y(n, H), dy(n, H), dx(n, K);
        x.fill(31);
        const Ctx ctx;
        const auto res = testing::gradcheck(
            {{"x", x.data(), dx.data(), n * (K + 3) - 3, false}},
            {{y.data(), dy.data(), n * (H + 3) - 3}},
            [&] { interp.forward(ctx, x.view(), y.view()); },
            [&] { interp.backward(ctx, x.view(), y.view(), dy.view(), dx.view()); });
        EXPECT_LE(res.max_rel_error, kTol) << "K=" << K << " H=" << H << " " << res.worst;
        EXPECT_TRUE(y.padding_intact() && dx.padding_intact()) << "K=" << K << " H=" << H;
      }
}

TEST(BlocksGrad, Bases) {
  using layers::BasisKind;
  for (auto kind : {BasisKind::kIdentity, BasisKind::kTrend, BasisKind::kSeasonality})
    for (Index q : {1, 3})
      for (auto [L, H] : {std::pair<Index, Index>{7, 5}, {12, 4}}) {
        layers::BasisExpansion<double> basis({.kind = kind,
                                              .input_size = L,
                                              .h = H,
                                              .n_polynomials = 2,
                                              .n_harmonics = 2,
                                              .outputs = q});
        const Index n = 3, S = basis.theta_size();
        Planner planner;
        basis.plan(planner, n);
        Arena arena(std::move(planner));
        RngStream rng(1, 0);
        basis.init(rng);
        Padded th(n, S), dth(n, S), b(n, L), db(n, L), f(n, H * q), df(n, H * q);
        th.fill(41);
        const Ctx ctx;
        const auto res = testing::gradcheck(
            {{"theta", th.data(), dth.data(), n * (S + 3) - 3, false}},
            {{b.data(), db.data(), n * (L + 3) - 3}, {f.data(), df.data(), n * (H * q + 3) - 3}},
            [&] { basis.forward(ctx, th.view(), b.view(), f.view()); },
            [&] { basis.backward(ctx, db.view(), df.view(), dth.view()); });
        EXPECT_LE(res.max_rel_error, kTol) << int(kind) << " q=" << q << " " << res.worst;
        EXPECT_TRUE(b.padding_intact() && f.padding_intact() && dth.padding_intact());
      }
}

TEST(BlocksGrad, ExogenousBasis) {
  for (auto [L, H, C] : {std::tuple<Index, Index, Index>{5, 3, 1}, {6, 4, 3}}) {
    layers::ExogenousBasis<double> basis({.input_size = L, .h = H, .channels = C});
    const Index n = 3, W = (L + H) * C;
    Padded th(n, 2 * C), dth(n, 2 * C), x(n, W), dx(n, W), b(n, L), db(n, L), f(n, H), df(n, H);
    th.fill(51);
    x.fill(61);
    const Ctx ctx;
    const auto res = testing::gradcheck(
        {{"theta", th.data(), dth.data(), n * (2 * C + 3) - 3, false},
         {"x", x.data(), dx.data(), n * (W + 3) - 3, false}},
        {{b.data(), db.data(), n * (L + 3) - 3}, {f.data(), df.data(), n * (H + 3) - 3}},
        [&] { basis.forward(ctx, th.view(), x.view(), b.view(), f.view()); },
        [&] {
          basis.backward(ctx, th.view(), x.view(), db.view(), df.view(), dth.view(), dx.view());
        });
    EXPECT_LE(res.max_rel_error, kTol) << res.worst;
    EXPECT_TRUE(b.padding_intact() && f.padding_intact() && dth.padding_intact() &&
                dx.padding_intact());
  }
}

TEST(BlocksGrad, MLPResidual) {
  struct Case {
    Index in, hidden, out;
    bool layernorm;
    double dropout;
  };
  for (const Case c : {Case{5, 8, 3, true, 0.0}, Case{4, 6, 4, false, 0.0},
                       Case{3, 5, 1, true, 0.0}, Case{6, 7, 5, true, 0.3}}) {
    layers::MLPResidual<double> block({.input_dim = c.in,
                                       .hidden_size = c.hidden,
                                       .output_dim = c.out,
                                       .dropout = c.dropout,
                                       .layernorm = c.layernorm,
                                       .stream = 9});
    const Index n = 4;
    Planner planner;
    block.plan(planner, n);
    Arena arena(std::move(planner));
    RngStream rng(3, 0);
    block.init(rng);
    std::vector<GradVar> vars;
    block.for_each_param([&](const std::string& name, Param<double>& p) {
      // Move the norm off 1 and 0 so that its gradients matter.
      for (auto& v : p.value) v += 0.1 * static_cast<double>(rng.uniform(-1.f, 1.f));
      vars.push_back({name, p.value.data, p.grad.data, p.value.numel(), true});
    });
    Padded x(n, c.in), dx(n, c.in), y(n, c.out), dy(n, c.out);
    x.fill(71);
    vars.push_back({"x", x.data(), dx.data(), n * (c.in + 3) - 3, false});
    Ctx ctx;
    ctx.seed = 5;
    const auto res = testing::gradcheck(
        vars, {{y.data(), dy.data(), n * (c.out + 3) - 3}},
        [&] { block.forward(ctx, x.view(), y.view()); },
        [&] { block.backward(ctx, x.view(), dy.view(), dx.view()); });
    EXPECT_LE(res.max_rel_error, kTol) << "in=" << c.in << " out=" << c.out << " " << res.worst;
    EXPECT_TRUE(y.padding_intact() && dx.padding_intact());
  }
}

TEST(BlocksGrad, TemporalDecoder) {
  struct Case {
    Index h, d, f, q;
    bool layernorm;
    double dropout;
  };
  for (const Case c :
       {Case{4, 3, 2, 1, false, 0.0}, Case{3, 2, 0, 2, true, 0.0}, Case{5, 2, 3, 3, true, 0.3}}) {
    layers::TemporalDecoder<double> dec({.h = c.h,
                                         .decoder_output_dim = c.d,
                                         .futr_dim = c.f,
                                         .hidden_size = 5,
                                         .outputs = c.q,
                                         .dropout = c.dropout,
                                         .layernorm = c.layernorm,
                                         .stream = 4});
    const Index B = 3;
    Planner planner;
    dec.plan(planner, B);
    Arena arena(std::move(planner));
    RngStream rng(8, 0);
    dec.init(rng);
    std::vector<GradVar> vars;
    dec.for_each_param([&](const std::string& name, Param<double>& p) {
      for (auto& v : p.value) v += 0.1 * static_cast<double>(rng.uniform(-1.f, 1.f));
      vars.push_back({name, p.value.data, p.grad.data, p.value.numel(), true});
    });
    Padded x(B, c.h * c.d), dx(B, c.h * c.d), fu(B, c.h * std::max<Index>(c.f, 1)),
        dfu(B, c.h * std::max<Index>(c.f, 1)), y(B, c.h * c.q), dy(B, c.h * c.q);
    x.fill(81);
    fu.fill(91);
    vars.push_back({"dec", x.data(), dx.data(), B * (c.h * c.d + 3) - 3, false});
    if (c.f > 0) vars.push_back({"futr", fu.data(), dfu.data(), B * (c.h * c.f + 3) - 3, false});
    auto fv = [&](Padded& p) { return c.f > 0 ? p.view() : MatView<double>{}; };
    Ctx ctx;
    ctx.seed = 3;
    const auto res = testing::gradcheck(
        vars, {{y.data(), dy.data(), B * (c.h * c.q + 3) - 3}},
        [&] { dec.forward(ctx, x.view(), fv(fu), y.view()); },
        [&] { dec.backward(ctx, dy.view(), dx.view(), fv(dfu)); });
    EXPECT_LE(res.max_rel_error, kTol) << "h=" << c.h << " f=" << c.f << " " << res.worst;
    EXPECT_TRUE(y.padding_intact() && dx.padding_intact() && dfu.padding_intact());
  }
}

// With a LayerNorm over one output the block's output is the norm's bias: forward_bias and
// backward_bias (TiDE skips its dense layers with them) give the full block's output and
// parameter gradients, and the full backward passes exactly zero to its inputs.
TEST(BlocksGrad, TemporalDecoderOutputIsBiasUnderOneOutputLayerNorm) {
  for (const Index f : {Index{0}, Index{2}}) {
    layers::TemporalDecoder<double> dec({.h = 4,
                                         .decoder_output_dim = 3,
                                         .futr_dim = f,
                                         .hidden_size = 6,
                                         .outputs = 1,
                                         .dropout = 0.3,
                                         .layernorm = true,
                                         .stream = 4});
    ASSERT_TRUE(dec.output_is_bias());
    const Index B = 5;
    Planner planner;
    dec.plan(planner, B);
    Arena arena(std::move(planner));
    RngStream rng(8, 0);
    dec.init(rng);
    dec.for_each_param([&](const std::string&, Param<double>& p) {
      for (auto& v : p.value) v += 0.5 * static_cast<double>(rng.uniform(-1.f, 1.f));
    });
    Padded x(B, 4 * 3), dx(B, 4 * 3), fu(B, 4 * std::max<Index>(f, 1)),
        dfu(B, 4 * std::max<Index>(f, 1)), y(B, 4), y_bias(B, 4), dy(B, 4);
    x.fill(81);
    fu.fill(91);
    dy.fill(7);
    auto fv = [&](Padded& p) { return f > 0 ? p.view() : MatView<double>{}; };
    Ctx ctx{.training = true, .seed = 3};
    auto grads = [&] {
      std::vector<double> g;
      dec.for_each_param([&](const std::string&, Param<double>& p) {
        g.insert(g.end(), p.grad.data, p.grad.data + p.grad.numel());
        std::fill(p.grad.data, p.grad.data + p.grad.numel(), 0.0);
      });
      return g;
    };
    grads();
    dec.forward(ctx, x.view(), fv(fu), y.view());
    dec.backward(ctx, dy.view(), dx.view(), fv(dfu));
    const std::vector<double> full = grads();
    dec.forward_bias(y_bias.view());
    dec.backward_bias(dy.view());
    const std::vector<double> bias = grads();
    double beta = 0;
    dec.for_each_param([&](const std::string& name, Param<double>& p) {
      if (name == "norm.bias") beta = p.value.data[0];
    });
    for (Index b = 0; b < B; ++b)
      for (Index t = 0; t < 4; ++t) {
        EXPECT_EQ(y.view()(b, t), beta);
        EXPECT_EQ(y_bias.view()(b, t), beta);
        for (Index d = 0; d < 3; ++d) EXPECT_EQ(dx.view()(b, t * 3 + d), 0.0);
      }
    ASSERT_EQ(full.size(), bias.size());
    double dbeta = 0;
    for (Index b = 0; b < B; ++b)
      for (Index t = 0; t < 4; ++t) dbeta += dy.view()(b, t);
    size_t nonzero = 0;
    for (size_t i = 0; i < full.size(); ++i) {
      EXPECT_NEAR(full[i], bias[i], 1e-12) << i;
      nonzero += full[i] != 0.0;
    }
    EXPECT_EQ(nonzero, 1u);  // the norm's bias, Σ dy
    EXPECT_NEAR(*std::max_element(bias.begin(), bias.end(),
                                  [](double a, double c) { return std::abs(a) < std::abs(c); }),
                dbeta, 1e-12);
  }
}

}  // namespace blocks_grad_test
}  // namespace shoal
