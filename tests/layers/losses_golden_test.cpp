// The point losses against neuralforecast 3.3.0's loss classes, in double, from
// tests/golden/losses.json (bench/peers/losses_golden.py): the value and d loss / d ŷ of MAE,
// MSE, RMSE, MAPE, SMAPE, MASE, HuberLoss and QuantileLoss, with a mask, with and without a
// horizon weight, on univariate ([B·H, 1]) and multivariate ([B·H, N]) views. The chunked path
// that trainers use (denominator, chunk, finish / finish_grad) must give the same numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/layers/losses.h"

namespace shoal {
namespace losses_golden_test {

using layers::LossConfig;
using layers::LossKind;
using layers::PointLoss;
using Vec = std::vector<double>;

const nlohmann::json& golden() {
  static const nlohmann::json j = [] {
    const auto path = std::filesystem::path(SHOAL_GOLDEN_DIR) / "losses.json";
    std::ifstream in(path);
    if (!in) throw Error("cannot open golden " + path.string());
    return nlohmann::json::parse(in);
  }();
  return j;
}

LossKind kind_of(const std::string& name) {
  const char* names[] = {"mae", "mse", "rmse", "mape", "smape", "mase", "huber", "quantile"};
  for (int k = 0; k < 8; ++k)
    if (name == names[k]) return static_cast<LossKind>(k);
  throw Error("unknown loss in golden: " + name);
}

LossConfig config_of(const nlohmann::json& c) {
  LossConfig cfg{.kind = kind_of(c["loss"].get<std::string>())};
  if (c.contains("delta")) cfg.delta = c["delta"].get<double>();
  if (c.contains("q")) cfg.q = c["q"].get<double>();
  if (c.contains("seasonality")) cfg.seasonality = c["seasonality"].get<Index>();
  cfg.horizon_weight = c["horizon_weight"].get<Vec>();
  return cfg;
}

double rel(double a, double b) {
  return std::abs(a - b) / std::max(std::abs(b), 1e-12);
}

TEST(LossesGolden, MatchesNeuralforecast) {
  ASSERT_EQ(golden().size(), 36u);
  for (const auto& [name, c] : golden().items()) {
    SCOPED_TRACE(name);
    const Index b = c["B"], h = c["h"], n = c["N"], l = c["L"];
    const Vec y = c["y"], y_hat = c["y_hat"], mask = c["mask"], insample = c["y_insample"],
              grad = c["grad"];
    const double value = c["value"];
    const ConstMat<double> p(y_hat.data(), b * h, n), t(y.data(), b * h, n),
        m(mask.data(), b * h, n);
    PointLoss<double> loss(config_of(c));
    loss.set_insample(insample.data(), b, l, n);
    const double v = loss.forward(p, t, {.mask = m});
    EXPECT_LE(rel(v, value), 1e-9) << v << " vs " << value;
    Vec d(y.size(), 7.0);
    loss.backward(p, t, {d.data(), b * h, n}, {.mask = m});
    double worst = 0, gmax = 0;
    for (size_t i = 0; i < d.size(); ++i) {
      worst = std::max(worst, std::abs(d[i] - grad[i]));
      gmax = std::max(gmax, std::abs(grad[i]));
    }
    EXPECT_LE(worst / gmax, 1e-9);

    // The trainers' path: Σ W first, then chunks of whole windows, then RMSE's outer √.
    const double den = loss.denominator(m, b * h, n);
    Vec dc(y.size(), 7.0);
    double num = 0;
    for (Index b0 = 0; b0 < b; b0 += 1) {
      const Index rows = h;
      num += loss.chunk(p.rows_block(b0 * h, rows), t.rows_block(b0 * h, rows),
                        m.rows_block(b0 * h, rows),
                        MatView<double>(dc.data(), b * h, n).rows_block(b0 * h, rows), 1.0 / den);
    }
    EXPECT_LE(rel(loss.finish(num / den), value), 1e-9);
    const double g = loss.finish_grad(num / den);
    worst = 0;
    for (size_t i = 0; i < dc.size(); ++i) worst = std::max(worst, std::abs(g * dc[i] - grad[i]));
    EXPECT_LE(worst / gmax, 1e-9);
  }
}

// The golden's MASE follows neuralforecast's broadcast (every error over every window's
// scale): a per-window scale would give a different value, so the test can tell them apart.
TEST(LossesGolden, MaseSumsEveryWindowsScale) {
  const auto& c = golden()["mase/uni"];
  const Index b = c["B"], h = c["h"], l = c["L"];
  const Vec y = c["y"], y_hat = c["y_hat"], mask = c["mask"], x = c["y_insample"];
  double num = 0, den = 0;
  for (Index w = 0; w < b; ++w) {
    double s = 0;
    for (Index t = 3; t < l; ++t) s += std::abs(x[size_t(w * l + t)] - x[size_t(w * l + t - 3)]);
    s /= double(l - 3);
    for (Index t = 0; t < h; ++t) {
      const size_t i = size_t(w * h + t);
      num += std::abs(y_hat[i] - y[i]) / s * mask[i];
      den += mask[i];
    }
  }
  EXPECT_GT(rel(num / den, c["value"].get<double>()), 1e-3);
}

}  // namespace losses_golden_test
}  // namespace shoal
