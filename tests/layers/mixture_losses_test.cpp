// Poisson and GMM likelihoods (layers/multi_output_losses.h): gradient checks in double by
// central differences on awkward shapes, chunks against the whole batch, the column layout,
// the mean, and sampled forecasts against the exact distributions. Their values and gradients
// against neuralforecast are in multi_output_losses_test.cpp's golden test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "shoal/layers/multi_output_losses.h"
#include "support/gradcheck.h"

namespace shoal {
namespace mixture_losses_test {

using layers::DistributionConfig;
using layers::DistributionKind;
using layers::DistributionNll;
using Vec = std::vector<double>;

struct Case {
  Index windows, h, n;
  bool masked;
  DistributionConfig cfg;
};

class MixtureGrad : public ::testing::TestWithParam<Case> {};

TEST_P(MixtureGrad, MatchesCentralDifferences) {
  const Case c = GetParam();
  DistributionNll<double> loss(c.cfg);
  const Index rows = c.windows * c.h, k = loss.outputs();
  const size_t nt = size_t(rows * c.n), np = nt * size_t(k), nw = size_t(c.windows * c.n);
  Vec raw(np), target(nt), mask(nt), draw(np), loc(nw), scale(nw);
  testing::fill_uniform(raw.data(), Index(np), 3, -2, 2);
  const bool poisson = c.cfg.kind == DistributionKind::kPoisson;
  testing::fill_uniform(target.data(), Index(nt), 4, poisson ? 0 : -4, poisson ? 6 : 4);
  if (poisson) {
    for (double& y : target) y = std::floor(y);
    target[0] = 0;  // xlogy's zero branch
    raw[0] = 12;    // x = raw·scale + loc past softplus's threshold 20
  } else {
    raw[size_t(k / 2)] = 21.5;  // a scale in softplus's linear branch
  }
  testing::fill_uniform(loc.data(), Index(nw), 5, poisson ? 1 : -1, poisson ? 3 : 1);
  testing::fill_uniform(scale.data(), Index(nw), 6, 0.3, 3);
  if (poisson) scale[0] = 2;
  testing::fill_uniform(mask.data(), Index(nt), 7, 0, 1);
  for (double& m : mask) m = m < 0.3 ? 0 : 1;
  mask[0] = 1;
  const ConstMat<double> m =
      c.masked ? ConstMat<double>(mask.data(), rows, c.n) : ConstMat<double>{};
  const ConstMat<double> lo(loc.data(), c.windows, c.n), sc(scale.data(), c.windows, c.n);
  double value = 0, dloss = 0;
  auto res = testing::gradcheck(
      {{"raw", raw.data(), draw.data(), Index(np), false}}, {{&value, &dloss, 1}},
      [&] {
        value = loss.forward({raw.data(), rows, c.n * k}, {target.data(), rows, c.n}, lo, sc, m);
      },
      [&] {
        loss.backward({raw.data(), rows, c.n * k}, {target.data(), rows, c.n}, lo, sc,
                      {draw.data(), rows, c.n * k}, m, dloss);
      });
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
  EXPECT_TRUE(std::isfinite(value));

  // Two chunks scaled by the whole batch's Σ W give the batch's loss and gradient.
  if (c.windows < 2) return;
  value = loss.forward({raw.data(), rows, c.n * k}, {target.data(), rows, c.n}, lo, sc, m);
  const double den = loss.denominator(m, rows, c.n);
  Vec whole(np), parts(np);
  loss.backward({raw.data(), rows, c.n * k}, {target.data(), rows, c.n}, lo, sc,
                {whole.data(), rows, c.n * k}, m);
  const Index r0 = c.h, r1 = rows - c.h;
  const auto chunk = [&](Index row, Index nrows) {
    const Index w = row / c.h;
    return loss.chunk(
        {raw.data() + row * c.n * k, nrows, c.n * k}, {target.data() + row * c.n, nrows, c.n},
        {loc.data() + w * c.n, nrows / c.h, c.n}, {scale.data() + w * c.n, nrows / c.h, c.n},
        c.masked ? ConstMat<double>(mask.data() + row * c.n, nrows, c.n) : ConstMat<double>{},
        {parts.data() + row * c.n * k, nrows, c.n * k}, 1 / den);
  };
  const double sum = chunk(0, r0) + chunk(r0, r1);
  EXPECT_NEAR(sum / den, value, 1e-12 * std::max(1.0, std::abs(value)));
  for (size_t i = 0; i < np; ++i) EXPECT_NEAR(parts[i], whole[i], 1e-14) << i;
}

DistributionConfig gmm(Index components, bool weighted) {
  return {.kind = DistributionKind::kGmm, .n_components = components, .weighted = weighted};
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MixtureGrad,
    ::testing::Values(Case{1, 1, 1, false, {.kind = DistributionKind::kPoisson}},
                      Case{3, 4, 1, true, {.kind = DistributionKind::kPoisson}},
                      Case{2,
                           5,
                           3,
                           true,
                           {.kind = DistributionKind::kPoisson,
                            .horizon_weight = {1, 2, 0.5, 1, 3}}},
                      Case{1, 1, 1, false, gmm(1, false)}, Case{3, 4, 1, true, gmm(3, false)},
                      Case{2, 5, 3, true, gmm(2, true)}, Case{2, 3, 2, false, gmm(5, true)},
                      Case{1, 2, 1, true, gmm(1, true)}));

TEST(MixtureLosses, GmmColumnsAndReturnOrderAsNeuralforecast) {
  // Series n's outputs are contiguous (reshape [B, H, N, M]); its return_params interleave the
  // components: μ_1, σ_1, w_1, μ_2, ...
  const DistributionConfig c = gmm(2, true);
  EXPECT_EQ(layers::distribution_parameters(c), 6);
  EXPECT_EQ(layers::distribution_column(c, 3, 1, 4), 10);
  EXPECT_EQ(layers::distribution_return_param(c, 0), 0);  // μ_1
  EXPECT_EQ(layers::distribution_return_param(c, 1), 2);  // σ_1
  EXPECT_EQ(layers::distribution_return_param(c, 2), 4);  // w_1
  EXPECT_EQ(layers::distribution_return_param(c, 3), 1);  // μ_2
  const DistributionConfig p{.kind = DistributionKind::kPoisson};
  EXPECT_EQ(layers::distribution_column(p, 3, 1, 0), 1);
  EXPECT_THROW(DistributionNll<double>(gmm(0, false)), Error);
  EXPECT_THROW(DistributionNll<double>(gmm(layers::kMaxMixtureComponents + 1, false)), Error);
  EXPECT_THROW(DistributionNll<double>(
                   {.kind = DistributionKind::kGmm, .horizon_weight = {1.0}, .n_components = 2}),
               Error);
}

TEST(MixtureLosses, GmmOfOneComponentIsTheNormal) {
  // One component, unweighted: log w = 0, the Normal's NLL with the same σ offset 0.2.
  const Vec raw = {0.3, -0.4}, y = {1.7}, loc = {0.5}, scale = {1.5};
  const ConstMat<double> r(raw.data(), 1, 2), t(y.data(), 1, 1), lo(loc.data(), 1, 1),
      sc(scale.data(), 1, 1);
  const double g = DistributionNll<double>(gmm(1, false)).forward(r, t, lo, sc);
  const double nrm =
      DistributionNll<double>({.kind = DistributionKind::kNormal}).forward(r, t, lo, sc);
  EXPECT_NEAR(g, nrm, 1e-14);
}

// The mean and quantiles of 40,000 draws lie within a few standard errors of the exact ones.
TEST(MixtureLosses, SampledPoissonMatchesTheDistribution) {
  const Vec qs = {0.5, 0.1, 0.9};
  for (const double lam : {3.5, 250.0}) {  // inversion and PTRS
    const Vec params = {lam};
    Vec mean(1), quants(3);
    layers::sample_distribution<double>(DistributionKind::kPoisson, {params.data(), 1, 1}, qs,
                                        40000, 5, {mean.data(), 1, 1}, {quants.data(), 1, 3});
    EXPECT_NEAR(mean[0], lam, 4 * std::sqrt(lam / 40000)) << lam;
    const double sd = std::sqrt(lam);
    EXPECT_NEAR(quants[0], lam, 0.05 * sd + 1) << lam;
    EXPECT_NEAR(quants[1], lam - 1.2816 * sd, 0.1 * sd + 1) << lam;
    EXPECT_NEAR(quants[2], lam + 1.2816 * sd, 0.1 * sd + 1) << lam;
    for (const double q : quants) EXPECT_EQ(q, std::floor(q));  // counts
  }
}

TEST(MixtureLosses, SampledGmmMatchesTheMixture) {
  // Weights 0.25 / 0.75 on N(−4, 1) and N(4, 1): mean 2; the q-quantile x solves
  // q = 0.25·Φ(x + 4) + 0.75·Φ(x − 4) (Φ⁻¹(0.4) = −0.2533, Φ⁻¹(1/3) = −0.4307, Φ⁻¹(0.6) = 0.2533).
  const DistributionConfig c = gmm(2, true);
  const Vec params = {-4, 4, 1, 1, 0.25, 0.75};
  const Vec qs = {0.7, 0.1, 0.5};
  Vec mean(1), quants(3);
  layers::sample_distribution<double>(c, {params.data(), 1, 6}, qs, 40000, 9, {mean.data(), 1, 1},
                                      {quants.data(), 1, 3});
  EXPECT_NEAR(mean[0], 2.0, 0.15);
  EXPECT_NEAR(quants[0], 4 + 0.2533, 0.06);
  EXPECT_NEAR(quants[1], -4 - 0.2533, 0.06);
  EXPECT_NEAR(quants[2], 4 - 0.4307, 0.06);
  // Equal weights when unweighted: half the draws on each side.
  const Vec eq = {-4, 4, 1, 1};
  layers::sample_distribution<double>(gmm(2, false), {eq.data(), 1, 4}, qs, 40000, 9,
                                      {mean.data(), 1, 1}, {quants.data(), 1, 3});
  EXPECT_NEAR(mean[0], 0.0, 0.15);
  EXPECT_NEAR(quants[1], -4 - 0.8416, 0.06);  // 0.1 = 0.5·Φ(x + 4)
}

}  // namespace mixture_losses_test
}  // namespace shoal
