// MQLoss, DistributionLoss (Normal, StudentT, Poisson) and GMM: values and gradients against
// neuralforecast
// 3.3.0 in double from tests/golden/multi_output_losses.json (bench/peers/losses_golden.py),
// gradient checks by central differences away from MQLoss's kinks, and the quantile lists of
// level_to_outputs / quantiles_to_outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/layers/multi_output_losses.h"
#include "support/gradcheck.h"

namespace shoal {
namespace multi_output_losses_test {

using layers::DistributionConfig;
using layers::DistributionKind;
using layers::DistributionNll;
using layers::MultiQuantileLoss;
using Vec = std::vector<double>;

const nlohmann::json& golden() {
  static const nlohmann::json j = [] {
    const auto path = std::filesystem::path(SHOAL_GOLDEN_DIR) / "multi_output_losses.json";
    std::ifstream in(path);
    if (!in) throw Error("cannot open golden " + path.string());
    return nlohmann::json::parse(in);
  }();
  return j;
}

double rel(double a, double b) {
  return std::abs(a - b) / std::max(std::abs(b), 1e-12);
}

double grad_error(const Vec& d, const Vec& want) {
  double worst = 0, gmax = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    worst = std::max(worst, std::abs(d[i] - want[i]));
    gmax = std::max(gmax, std::abs(want[i]));
  }
  return worst / gmax;
}

DistributionKind kind_of(const std::string& s) {
  if (s == "Normal") return DistributionKind::kNormal;
  if (s == "StudentT") return DistributionKind::kStudentT;
  if (s == "Poisson") return DistributionKind::kPoisson;
  if (s == "GMM") return DistributionKind::kGmm;
  throw Error("unknown distribution in golden: " + s);
}

TEST(MultiOutputLossesGolden, MatchesNeuralforecast) {
  ASSERT_EQ(golden().size(), 24u);
  int mq = 0, dist = 0;
  for (const auto& [name, c] : golden().items()) {
    SCOPED_TRACE(name);
    const Index b = c["B"], h = c["h"], n = c["N"];
    const Vec y = c["y"], mask = c["mask"], grad = c["grad"], hw = c["horizon_weight"];
    const double value = c["value"];
    const ConstMat<double> t(y.data(), b * h, n), m(mask.data(), b * h, n);
    if (c["loss"] == "mqloss") {
      ++mq;
      const Vec y_hat = c["y_hat"], qs = c["quantiles"];
      MultiQuantileLoss<double> loss({.quantiles = qs, .horizon_weight = hw});
      const Index k = loss.outputs();
      const ConstMat<double> p(y_hat.data(), b * h, n * k);
      EXPECT_LE(rel(loss.forward(p, t, m), value), 1e-9);
      Vec d(y_hat.size(), 7.0);
      loss.backward(p, t, {d.data(), b * h, n * k}, m);
      EXPECT_LE(grad_error(d, grad), 1e-9);
    } else {
      ++dist;
      const Vec raw = c["raw"], loc = c["loc"], scale = c["scale"], params = c["params"];
      DistributionNll<double> loss({.kind = kind_of(c["distribution"].get<std::string>()),
                                    .horizon_weight = hw,
                                    .n_components = c.value("n_components", Index(1)),
                                    .weighted = c.value("weighted", false)});
      const Index k = loss.outputs();
      const ConstMat<double> r(raw.data(), b * h, n * k), lo(loc.data(), b, n),
          sc(scale.data(), b, n);
      Vec mapped(raw.size());
      loss.map_parameters(r, lo, sc, {mapped.data(), b * h, n * k});
      EXPECT_LE(grad_error(mapped, params), 1e-12);
      EXPECT_LE(rel(loss.forward(r, t, lo, sc, m), value), 1e-9);
      Vec d(raw.size(), 7.0);
      loss.backward(r, t, lo, sc, {d.data(), b * h, n * k}, m);
      EXPECT_LE(grad_error(d, grad), 1e-9);
      if (c.contains("mean")) {  // distr.mean (Poisson's λ, GMM's Σ w·μ)
        const Vec want = c["mean"];
        Vec got(want.size());
        loss.mean(r, lo, sc, {got.data(), b * h, n});
        EXPECT_LE(grad_error(got, want), 1e-12);
      }
    }
  }
  EXPECT_EQ(mq, 8);
  EXPECT_EQ(dist, 16);
}

struct GradCase {
  Index windows, h, n;
  bool masked, weighted;
};

class MultiQuantileGrad : public ::testing::TestWithParam<GradCase> {};

TEST_P(MultiQuantileGrad, MatchesCentralDifferences) {
  const auto c = GetParam();
  const Vec qs = {0.5, 0.05, 0.1, 0.9, 0.95};
  const Index rows = c.windows * c.h, k = Index(qs.size());
  const size_t nt = size_t(rows * c.n), np = nt * size_t(k);
  Vec pred(np), target(nt), mask(nt), u(np), dpred(np), hw(size_t(c.h));
  testing::fill_uniform(target.data(), Index(nt), 3, -2, 2);
  testing::fill_uniform(u.data(), Index(np), 4, 0, 1);
  // Errors of magnitude ≥ 0.05: no central difference crosses the kink at e = 0.
  for (size_t i = 0; i < np; ++i) {
    const double e = 0.05 + 2 * u[i];
    pred[i] = target[i / size_t(k)] + (i % 3 == 1 ? -e : e);
  }
  testing::fill_uniform(mask.data(), Index(nt), 5, 0, 1);
  for (double& m : mask) m = m < 0.3 ? 0 : 1;
  mask[0] = 1;
  testing::fill_uniform(hw.data(), c.h, 6, 0.25, 2);
  MultiQuantileLoss<double> loss({.quantiles = qs, .horizon_weight = c.weighted ? hw : Vec{}});
  const ConstMat<double> m =
      c.masked ? ConstMat<double>(mask.data(), rows, c.n) : ConstMat<double>{};
  double value = 0, dloss = 0;
  auto res = testing::gradcheck(
      {{"pred", pred.data(), dpred.data(), Index(np), false}}, {{&value, &dloss, 1}},
      [&] {
        value = loss.forward({pred.data(), rows, c.n * k}, {target.data(), rows, c.n}, m);
      },
      [&] {
        loss.backward({pred.data(), rows, c.n * k}, {target.data(), rows, c.n},
                      {dpred.data(), rows, c.n * k}, m, dloss);
      });
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
  EXPECT_GT(value, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Shapes, MultiQuantileGrad,
                         ::testing::Values(GradCase{1, 1, 1, false, false},
                                           GradCase{3, 4, 1, true, false},
                                           GradCase{2, 5, 3, true, true},
                                           GradCase{4, 2, 2, false, true}));

class DistributionGrad : public ::testing::TestWithParam<std::tuple<DistributionKind, GradCase>> {};

TEST_P(DistributionGrad, MatchesCentralDifferences) {
  const auto [kind, c] = GetParam();
  const Index rows = c.windows * c.h, k = layers::distribution_parameters(kind);
  const size_t nt = size_t(rows * c.n), np = nt * size_t(k), nw = size_t(c.windows * c.n);
  Vec raw(np), target(nt), mask(nt), draw(np), hw(size_t(c.h)), loc(nw), scale(nw);
  testing::fill_uniform(raw.data(), Index(np), 3, -3, 3);
  raw[0] = 21.5;  // softplus's linear branch (torch's threshold 20)
  testing::fill_uniform(target.data(), Index(nt), 4, -4, 4);
  testing::fill_uniform(loc.data(), Index(nw), 5, -1, 1);
  testing::fill_uniform(scale.data(), Index(nw), 6, 0.3, 3);
  testing::fill_uniform(mask.data(), Index(nt), 7, 0, 1);
  for (double& m : mask) m = m < 0.3 ? 0 : 1;
  mask[0] = 1;
  testing::fill_uniform(hw.data(), c.h, 8, 0.25, 2);
  DistributionNll<double> loss({.kind = kind, .horizon_weight = c.weighted ? hw : Vec{}});
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
}

INSTANTIATE_TEST_SUITE_P(Shapes, DistributionGrad,
                         ::testing::Combine(::testing::Values(DistributionKind::kNormal,
                                                              DistributionKind::kStudentT),
                                            ::testing::Values(GradCase{1, 1, 1, false, false},
                                                              GradCase{3, 4, 1, true, false},
                                                              GradCase{2, 5, 3, true, true})));

TEST(MultiOutputLosses, LevelQuantilesAsNeuralforecast) {
  // level_to_outputs([80, 90]): 0.5 first, then 0.05, 0.1, 0.9, 0.95 as float32.
  const Vec level = {80, 90, 80};
  const Vec q = layers::level_quantiles(level);
  const Vec want = {0.5, double(5.0f / 100.0f), double(10.0f / 100.0f), double(90.0f / 100.0f),
                    double(95.0f / 100.0f)};
  EXPECT_EQ(q, want);
  const Vec given = {0.1, 0.5, 0.1, 0.9};
  EXPECT_EQ(layers::unique_quantiles(given), (Vec{double(0.1f), 0.5, double(0.9f)}));
}

TEST(MultiOutputLosses, AllMaskedGivesZeroLossAndGradient) {
  const Vec pred = {1, 2, 3, 4}, target = {0, 0}, mask = {0, 0};
  MultiQuantileLoss<double> loss({.quantiles = {0.1, 0.9}});
  EXPECT_EQ(loss.forward({pred.data(), 2, 2}, {target.data(), 2, 1}, {mask.data(), 2, 1}), 0.0);
  Vec d(4, 7.0);
  loss.backward({pred.data(), 2, 2}, {target.data(), 2, 1}, {d.data(), 2, 2}, {mask.data(), 2, 1});
  EXPECT_EQ(d, Vec(4, 0.0));
}

TEST(MultiOutputLosses, MultiQuantileByHand) {
  // One value y = 1, quantiles 0.1 and 0.9 predicted at 0 and 3: 0.1·1 + 0.1·2 = 0.3 (a sum
  // over the quantiles, as neuralforecast's).
  const Vec pred = {0, 3}, target = {1};
  MultiQuantileLoss<double> loss({.quantiles = {0.1, 0.9}});
  EXPECT_NEAR(loss.forward({pred.data(), 1, 2}, {target.data(), 1, 1}), 0.3, 1e-15);
}

TEST(MultiOutputLosses, RejectsBadShapesAndQuantiles) {
  EXPECT_THROW(MultiQuantileLoss<double>({.quantiles = {}}), Error);
  EXPECT_THROW(MultiQuantileLoss<double>({.quantiles = {1.5}}), Error);
  const Vec pred = {0, 3, 1}, target = {1};
  MultiQuantileLoss<double> loss({.quantiles = {0.1, 0.9}});
  EXPECT_THROW(loss.forward({pred.data(), 1, 3}, {target.data(), 1, 1}), Error);
}

// Sampled predictions: the mean and the quantiles of 40,000 draws lie within a few standard
// errors of the exact ones (N(2, 3²): 2 + 3·Φ⁻¹(q); StudentT(ν = 5): 2 + 3·t₅⁻¹(q)), a fixed seed
// repeats its draws, and a quantile 0 / 1 is the smallest / largest draw.
TEST(MultiOutputLosses, SampledQuantilesMatchTheDistribution) {
  const Vec qs = {0.5, 0.05, 0.1, 0.9, 0.95, 0.0, 1.0};
  const Vec normal_z = {0, -1.6448536, -1.2815516, 1.2815516, 1.6448536};
  const Vec student_t = {0, -2.0150484, -1.4758840, 1.4758840, 2.0150484};
  for (const DistributionKind kind : {DistributionKind::kNormal, DistributionKind::kStudentT}) {
    const bool t = kind == DistributionKind::kStudentT;
    const Vec params = t ? Vec{5, 2, 3} : Vec{2, 3};
    const Index k = Index(params.size()), n = 40000;
    Vec mean(1), quants(qs.size()), again(qs.size());
    layers::sample_distribution<double>(kind, {params.data(), 1, k}, qs, n, 11, {mean.data(), 1, 1},
                                        {quants.data(), 1, Index(qs.size())});
    EXPECT_NEAR(mean[0], 2.0, 0.06);
    for (size_t i = 0; i < 5; ++i)
      EXPECT_NEAR(quants[i], 2 + 3 * (t ? student_t[i] : normal_z[i]), 0.12) << qs[i];
    EXPECT_LT(quants[5], quants[1]);
    EXPECT_GT(quants[6], quants[4]);
    layers::sample_distribution<double>(kind, {params.data(), 1, k}, qs, n, 11, {mean.data(), 1, 1},
                                        {again.data(), 1, Index(qs.size())});
    EXPECT_EQ(quants, again);
  }
}

}  // namespace multi_output_losses_test
}  // namespace shoal
