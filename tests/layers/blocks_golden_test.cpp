// Forward and backward of the NBEATS / NBEATSx / NHITS / TiDE blocks against torch and
// neuralforecast 3.3.0, in double, from tests/golden/blocks.json (bench/peers/blocks_golden.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/layers/interpolate1d.h"
#include "shoal/layers/mlp_residual.h"
#include "shoal/layers/nbeats_basis.h"
#include "shoal/layers/pointwise.h"
#include "shoal/layers/pool1d.h"

namespace shoal {
namespace blocks_golden_test {

using Vec = std::vector<double>;

const nlohmann::json& golden() {
  static const nlohmann::json j = [] {
    const auto path = std::filesystem::path(SHOAL_GOLDEN_DIR) / "blocks.json";
    std::ifstream in(path);
    if (!in) throw Error("cannot open golden " + path.string());
    return nlohmann::json::parse(in);
  }();
  return j;
}

// The cases whose name starts with `prefix`.
std::vector<std::string> cases(const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& [k, v] : golden().items())
    if (k.rfind(prefix, 0) == 0) names.push_back(k);
  return names;
}

Vec arr(const nlohmann::json& c, const std::string& name) {
  return c.at(name).get<Vec>();
}

MatView<double> mat(Vec& v, Index rows) {
  return {v.data(), rows, static_cast<Index>(v.size()) / rows};
}

void expect_near(const Vec& got, const Vec& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << what << "[" << i << "]";
}

template <class Layer>
void check_act(const std::string& name, Layer layer) {
  const auto& c = golden().at("act/" + name);
  Vec x = arr(c, "x"), dy = arr(c, "dy"), y(x.size()), dx(x.size());
  const Ctx ctx;
  layer.forward(ctx, mat(x, 1), mat(y, 1));
  layer.backward(ctx, mat(x, 1), mat(y, 1), mat(dy, 1), mat(dx, 1));
  expect_near(y, arr(c, "y"), 1e-14, name + " y");
  expect_near(dx, arr(c, "dx"), 1e-14, name + " dx");
}

TEST(BlocksGolden, Activations) {
  check_act("Softplus", layers::Softplus<double>());
  check_act("Tanh", layers::Tanh<double>());
  check_act("SELU", layers::SELU<double>());
  check_act("LeakyReLU", layers::LeakyReLU<double>());
  check_act("Sigmoid", layers::Sigmoid<double>());
}

TEST(BlocksGolden, PReLU) {
  const auto& c = golden().at("act/PReLU");
  layers::PReLU<double> prelu;
  Planner planner;
  prelu.plan(planner, 1);
  Arena arena(std::move(planner));
  RngStream rng(1, 0);
  prelu.init(rng);
  prelu.p.weight.grad.data[0] = 0;
  Vec x = arr(c, "x"), dy = arr(c, "dy"), y(x.size()), dx(x.size());
  const Ctx ctx;
  prelu.forward(ctx, mat(x, 1), mat(y, 1));
  prelu.backward(ctx, mat(x, 1), mat(y, 1), mat(dy, 1), mat(dx, 1));
  expect_near(y, arr(c, "y"), 1e-14, "y");
  expect_near(dx, arr(c, "dx"), 1e-14, "dx");
  EXPECT_NEAR(prelu.p.weight.grad.data[0], arr(c, "dweight")[0], 1e-13);
}

TEST(BlocksGolden, Pooling) {
  const auto names = cases("pool/");
  ASSERT_GE(names.size(), 40u);
  for (const auto& name : names) {
    const auto& c = golden().at(name);
    const Index L = c.at("L"), k = c.at("k"), P = c.at("P");
    const auto mode =
        name.find("Max") != std::string::npos ? layers::PoolMode::kMax : layers::PoolMode::kAvg;
    layers::Pool1d<double> pool({.length = L, .kernel_size = k, .mode = mode});
    ASSERT_EQ(pool.out_length(), P) << name;
    Vec x = arr(c, "x"), dy = arr(c, "dy"), y(static_cast<size_t>(2 * P)), dx(x.size(), 7.0);
    const Ctx ctx;
    pool.forward(ctx, mat(x, 2), mat(y, 2));
    pool.backward(ctx, mat(x, 2), mat(y, 2), mat(dy, 2), mat(dx, 2));
    expect_near(y, arr(c, "y"), 1e-15, name + " y");
    expect_near(dx, arr(c, "dx"), 1e-15, name + " dx");
  }
}

TEST(BlocksGolden, Interpolation) {
  const auto names = cases("interp/");
  ASSERT_GE(names.size(), 60u);
  for (const auto& name : names) {
    const auto& c = golden().at(name);
    const Index K = c.at("K"), H = c.at("H");
    const auto mode = name.find("nearest") != std::string::npos ? layers::InterpMode::kNearest
                                                                : layers::InterpMode::kLinear;
    layers::Interpolate1d<double> interp({.in_size = K, .out_size = H, .mode = mode});
    Vec x = arr(c, "x"), dy = arr(c, "dy"), y(static_cast<size_t>(2 * H)), dx(x.size(), 7.0);
    const Ctx ctx;
    interp.forward(ctx, mat(x, 2), mat(y, 2));
    interp.backward(ctx, mat(x, 2), mat(y, 2), mat(dy, 2), mat(dx, 2));
    expect_near(y, arr(c, "y"), 1e-14, name + " y");
    expect_near(dx, arr(c, "dx"), 1e-14, name + " dx");
  }
}

void check_basis(const std::string& name, layers::BasisExpansion<double>::Config cfg) {
  const auto& c = golden().at(name);
  layers::BasisExpansion<double> basis(cfg);
  Planner planner;
  basis.plan(planner, 3);
  Arena arena(std::move(planner));
  RngStream rng(1, 0);
  basis.init(rng);
  const Vec bb(basis.backcast_basis.view.begin(), basis.backcast_basis.view.end());
  const Vec bf(basis.forecast_basis.view.begin(), basis.forecast_basis.view.end());
  // The fixed bases are float32 in torch and here: equal bit for bit.
  expect_near(bb, arr(c, "backcast_basis"), 0, name + " backcast_basis");
  expect_near(bf, arr(c, "forecast_basis"), 0, name + " forecast_basis");
  Vec theta = arr(c, "theta"), db = arr(c, "dbackcast"), df = arr(c, "dforecast");
  ASSERT_EQ(static_cast<Index>(theta.size()), 3 * basis.theta_size()) << name;
  Vec back(db.size()), fore(df.size()), dtheta(theta.size());
  const Ctx ctx;
  basis.forward(ctx, mat(theta, 3), mat(back, 3), mat(fore, 3));
  basis.backward(ctx, mat(db, 3), mat(df, 3), mat(dtheta, 3));
  expect_near(back, arr(c, "backcast"), 1e-13, name + " backcast");
  expect_near(fore, arr(c, "forecast"), 1e-13, name + " forecast");
  expect_near(dtheta, arr(c, "dtheta"), 1e-13, name + " dtheta");
}

TEST(BlocksGolden, TrendAndSeasonalityBases) {
  int n = 0;
  for (const std::string prefix : {"basis/trend_", "basis/trendx_"})
    for (const auto& name : cases(prefix)) {
      const auto& c = golden().at(name);
      check_basis(name, {.kind = layers::BasisKind::kTrend,
                         .input_size = c.at("L"),
                         .h = c.at("H"),
                         .n_polynomials = c.at("n_polynomials"),
                         .outputs = c.at("Q")});
      ++n;
    }
  for (const auto& name : cases("basis/seasonality_")) {
    const auto& c = golden().at(name);
    check_basis(name, {.kind = layers::BasisKind::kSeasonality,
                       .input_size = c.at("L"),
                       .h = c.at("H"),
                       .n_harmonics = c.at("n_harmonics"),
                       .outputs = c.at("Q")});
    ++n;
  }
  EXPECT_EQ(n, 20);
}

TEST(BlocksGolden, OtherTrendBasesMatchNumpy) {
  const auto names = cases("trend_basis/");
  ASSERT_EQ(names.size(), 20u);
  for (const auto& name : names) {
    const auto& c = golden().at(name);
    const auto kind = layers::parse_trend_basis(c.at("kind"));
    const Index n = c.at("n_basis");
    // Built in double as numpy builds them, then rounded to float: equal bit for bit.
    expect_near(layers::trend_basis(c.at("L"), n, kind), arr(c, "backcast_basis"), 0,
                name + " backcast");
    expect_near(layers::trend_basis(c.at("H"), n, kind), arr(c, "forecast_basis"), 0,
                name + " forecast");
  }
  EXPECT_THROW(layers::parse_trend_basis("spline"), Error);
}

TEST(BlocksGolden, SeasonalityThetaSizeMatchesNeuralforecast) {
  // NBEATS.create_stack: n_theta = 2·(Q + 1)·int(ceil(n_harmonics / 2 · h) − (n_harmonics − 1)).
  for (Index harm = 1; harm <= 4; ++harm)
    for (Index h = 2; h <= 30; ++h) {
      const Index f = static_cast<Index>(std::ceil(static_cast<double>(harm) / 2 * h) -
                                         static_cast<double>(harm - 1));
      EXPECT_EQ(layers::seasonality_frequencies(harm, h), f) << harm << " " << h;
    }
}

TEST(BlocksGolden, ExogenousBasis) {
  const auto names = cases("exog/");
  ASSERT_EQ(names.size(), 2u);
  for (const auto& name : names) {
    const auto& c = golden().at(name);
    layers::ExogenousBasis<double> basis(
        {.input_size = c.at("L"), .h = c.at("H"), .channels = c.at("C")});
    Vec theta = arr(c, "theta"), x = arr(c, "x"), db = arr(c, "dbackcast"),
        df = arr(c, "dforecast");
    Vec back(db.size()), fore(df.size()), dtheta(theta.size()), dx(x.size());
    const Ctx ctx;
    basis.forward(ctx, mat(theta, 3), mat(x, 3), mat(back, 3), mat(fore, 3));
    basis.backward(ctx, mat(theta, 3), mat(x, 3), mat(db, 3), mat(df, 3), mat(dtheta, 3),
                   mat(dx, 3));
    expect_near(back, arr(c, "backcast"), 1e-14, name + " backcast");
    expect_near(fore, arr(c, "forecast"), 1e-14, name + " forecast");
    expect_near(dtheta, arr(c, "dtheta"), 1e-14, name + " dtheta");
    expect_near(dx, arr(c, "dx"), 1e-14, name + " dx");
  }
}

template <class T>
std::vector<double> values(const TensorView<T>& v) {
  return {v.begin(), v.end()};
}

template <class T>
typename layers::MLPResidual<T>::Config mlp_config(const nlohmann::json& c) {
  return {.input_dim = c.at("I"),
          .hidden_size = c.at("K"),
          .output_dim = c.at("O"),
          .layernorm = c.at("layernorm")};
}

TEST(BlocksGolden, MLPResidual) {
  const auto names = cases("mlp_residual/");
  ASSERT_EQ(names.size(), 3u);
  for (const auto& name : names) {
    const auto& c = golden().at(name);
    const auto cfg = mlp_config<double>(c);
    // Initialisation: a float block drawn from torch's generator reproduces nn.Linear's.
    {
      layers::MLPResidual<float> f32(mlp_config<float>(c));
      Planner planner;
      f32.plan(planner, 4);
      Arena arena(std::move(planner));
      RngStream rng(c.at("seed").get<uint64_t>(), 0, Generator::kTorchCpu);
      f32.init(rng);
      f32.for_each_param([&](const std::string& pname, Param<float>& p) {
        expect_near(values(p.value), arr(c, "init/" + pname), 0, name + " init " + pname);
      });
    }
    layers::MLPResidual<double> block(cfg);
    Planner planner;
    block.plan(planner, 4);
    Arena arena(std::move(planner));
    int params = 0;
    block.for_each_param([&](const std::string& pname, Param<double>& p) {
      const Vec w = arr(c, "weights/" + pname);
      ASSERT_EQ(static_cast<Index>(w.size()), p.value.numel()) << pname;
      std::copy(w.begin(), w.end(), p.value.data);
      std::fill(p.grad.begin(), p.grad.end(), 0.0);
      ++params;
    });
    EXPECT_EQ(params, cfg.layernorm ? 8 : 6);
    Vec x = arr(c, "x"), dy = arr(c, "dy"), y(dy.size()), dx(x.size());
    const Ctx ctx;
    block.forward(ctx, mat(x, 4), mat(y, 4));
    block.backward(ctx, mat(x, 4), mat(dy, 4), mat(dx, 4));
    expect_near(y, arr(c, "y"), 1e-12, name + " y");
    expect_near(dx, arr(c, "dx"), 1e-12, name + " dx");
    block.for_each_param([&](const std::string& pname, Param<double>& p) {
      expect_near(values(p.grad), arr(c, "grads/" + pname), 1e-12, name + " grad " + pname);
    });
  }
}

TEST(BlocksGolden, TemporalDecoder) {
  const auto names = cases("temporal_decoder/");
  ASSERT_EQ(names.size(), 3u);
  for (const auto& name : names) {
    const auto& c = golden().at(name);
    const Index H = c.at("H"), D = c.at("D"), F = c.at("F"), Q = c.at("Q"), B = 3;
    layers::TemporalDecoder<double> dec({.h = H,
                                         .decoder_output_dim = D,
                                         .futr_dim = F,
                                         .hidden_size = c.at("K"),
                                         .outputs = Q,
                                         .layernorm = c.at("layernorm")});
    Planner planner;
    dec.plan(planner, B);
    Arena arena(std::move(planner));
    dec.for_each_param([&](const std::string& pname, Param<double>& p) {
      const Vec w = arr(c, "weights/" + pname);
      ASSERT_EQ(static_cast<Index>(w.size()), p.value.numel()) << pname;
      std::copy(w.begin(), w.end(), p.value.data);
      std::fill(p.grad.begin(), p.grad.end(), 0.0);
    });
    Vec d = arr(c, "dec"), f = arr(c, "futr"), dy = arr(c, "dy"), y(dy.size()), dd(d.size()),
        df(f.size());
    const MatView<double> fv = F > 0 ? mat(f, B) : MatView<double>{},
                          dfv = F > 0 ? mat(df, B) : MatView<double>{};
    const Ctx ctx;
    dec.forward(ctx, mat(d, B), fv, mat(y, B));
    dec.backward(ctx, mat(dy, B), mat(dd, B), dfv);
    expect_near(y, arr(c, "y"), 1e-12, name + " y");
    expect_near(dd, arr(c, "ddec"), 1e-12, name + " ddec");
    expect_near(df, arr(c, "dfutr"), 1e-12, name + " dfutr");
    dec.for_each_param([&](const std::string& pname, Param<double>& p) {
      expect_near(values(p.grad), arr(c, "grads/" + pname), 1e-12, name + " grad " + pname);
    });
  }
}

}  // namespace blocks_golden_test
}  // namespace shoal
