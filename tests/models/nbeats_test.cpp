// NBEATS: parity with neuralforecast 3.3.0 (init for a random_seed, float64 forward and
// gradients, from tests/golden/nbeats.json written by bench/peers/blocks_golden.py), gradient
// checks in double, and a fit through ForecastTrainer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/models/nbeats.h"
#include "shoal/train/forecast_trainer.h"
#include "support/blocks_golden.h"
#include "support/gradcheck.h"

namespace shoal {
namespace nbeats_test {

using models::ForecastInputs;
using models::NBEATS;
using Vec = std::vector<double>;

// neuralforecast's keyword arguments, its defaults for the ones a case leaves out.
template <class T>
typename NBEATS<T>::Config config_of(const nlohmann::json& kw) {
  typename NBEATS<T>::Config c;
  c.h = kw.at("h");
  c.input_size = kw.at("input_size");
  c.mlp_units.clear();
  for (const auto& pair : kw.at("mlp_units"))
    for (const auto& u : pair) c.mlp_units.push_back(u.get<int64_t>());
  if (kw.contains("stack_types")) c.stack_types = kw["stack_types"].get<std::vector<std::string>>();
  if (kw.contains("n_blocks")) c.n_blocks = kw["n_blocks"].get<std::vector<int64_t>>();
  if (kw.contains("n_basis")) c.n_basis = kw["n_basis"];
  if (kw.contains("n_harmonics")) c.n_harmonics = kw["n_harmonics"];
  if (kw.contains("activation")) c.activation = kw["activation"];
  if (kw.contains("shared_weights")) c.shared_weights = kw["shared_weights"];
  if (kw.contains("basis")) c.basis = kw["basis"];
  return c;
}

TEST(NbeatsGolden, InitMatchesNeuralforecastForItsSeed) {
  const nlohmann::json& g = golden::blocks_golden("nbeats");
  ASSERT_EQ(g.size(), 5u);
  golden::expect_init<NBEATS>(g, config_of<double>);
}

TEST(NbeatsGolden, ForwardAndGradientsMatchNeuralforecast) {
  golden::expect_forward_and_grads<NBEATS>(golden::blocks_golden("nbeats"), config_of<double>);
}

TEST(NbeatsGrad, MatchesCentralDifferences) {
  for (const std::string act : {"ReLU", "Tanh", "PReLU", "SELU"}) {
    NBEATS<double>::Config cfg;
    cfg.h = 5;
    cfg.input_size = 9;
    cfg.stack_types = {"identity", "trend", "seasonality"};
    cfg.n_blocks = {1, 2, 1};
    cfg.mlp_units = {6, 6, 6, 7};
    cfg.activation = act;
    cfg.shared_weights = act == "PReLU";  // the trend stack's two blocks on one MLP
    NBEATS<double> model(cfg);
    const Index B = 3;
    Planner planner;
    model.plan(planner, B);
    Arena arena(std::move(planner));
    RngStream rng(2, models::kInitStream, Generator::kTorchCpu);
    model.init(rng);
    std::vector<testing::GradVar> vars;
    model.for_each_param([&](const std::string& key, Param<double>& p) {
      if (p.value.numel() == 1) p.value.data[0] += 0.07;  // PReLU off its init
      vars.push_back({key, p.value.data, p.grad.data, p.value.numel(), true});
    });
    Vec y(static_cast<size_t>(B * cfg.input_size)), out(static_cast<size_t>(B * cfg.h)),
        dout(out.size());
    testing::fill_uniform(y.data(), static_cast<int64_t>(y.size()), 19, -2, 2);
    ForecastInputs<double> in;
    in.batch = B;
    in.insample_y = y.data();
    const Ctx ctx;
    const auto res = testing::gradcheck(
        vars, {{out.data(), dout.data(), static_cast<int64_t>(out.size())}},
        [&] {
          const ConstMat<double> o = model.forward(ctx, in);
          std::copy(o.data, o.data + o.rows, out.begin());
        },
        [&] { model.backward(ctx, in, ConstMat<double>(dout.data(), B * cfg.h, 1)); });
    EXPECT_LE(res.max_rel_error, 1e-6) << act << " " << res.worst;
  }
}

static_assert(train::WindowModel<NBEATS<float>, float>);

TEST(NbeatsTrain, LearnsASine) {
  NBEATS<float>::Config cfg;
  cfg.h = 6;
  cfg.input_size = 18;
  cfg.mlp_units = {32, 32, 32, 32};
  NBEATS<float> model(cfg);
  const Index B = 16, L = cfg.input_size, H = cfg.h;
  train::ForecastTrainer<NBEATS<float>, float> trainer(
      model, {.max_batch = B, .seed = 3, .adam = {.lr = 3e-3}});
  std::vector<float> series(400);
  RngStream noise(5, 0);
  for (size_t t = 0; t < series.size(); ++t)
    series[t] = static_cast<float>(std::sin(0.3 * double(t)) + 0.05 * noise.uniform(-1.f, 1.f));
  std::vector<float> ins(static_cast<size_t>(B * L)), tgt(static_cast<size_t>(B * H));
  std::vector<double> losses;
  for (Index s = 0; s < 120; ++s) {
    for (Index w = 0; w < B; ++w) {
      const Index st = (s * 37 + w * 11) % (400 - L - H);
      for (Index t = 0; t < L; ++t) ins[size_t(w * L + t)] = series[size_t(st + t)];
      for (Index t = 0; t < H; ++t) tgt[size_t(w * H + t)] = series[size_t(st + L + t)];
    }
    const ForecastInputs<float> in{.batch = B, .insample_y = ins.data()};
    losses.push_back(trainer.train_step(in, ConstMat<float>(tgt.data(), B * H, 1)));
  }
  double first = 0, last = 0;
  for (size_t i = 0; i < 10; ++i) {
    first += losses[i];
    last += losses[losses.size() - 1 - i];
  }
  EXPECT_LT(last, 0.3 * first) << "first 10 steps " << first / 10 << ", last 10 " << last / 10;
}

TEST(NbeatsConfig, RejectsWhatNeuralforecastRejects) {
  NBEATS<float>::Config c;
  c.h = 4;
  c.input_size = 8;
  c.validate();
  auto bad = [&](auto mutate) {
    NBEATS<float>::Config b = c;
    mutate(b);
    EXPECT_THROW(b.validate(), Error);
  };
  bad([](auto& b) { b.stack_types = {"exogenous", "trend", "seasonality"}; });
  bad([](auto& b) { b.n_blocks = {1, 1}; });
  bad([](auto& b) { b.h = 1; });  // trend and seasonality need h > 1
  bad([](auto& b) { b.mlp_units = {8, 8, 4, 4}; });
  bad([](auto& b) { b.dropout_prob_theta = 0.1; });
  bad([](auto& b) { b.basis = "spline"; });
  bad([](auto& b) {
    b.basis = "linear_hat";
    b.n_basis = 0;
  });
  NBEATS<float>::Config one = c;
  one.h = 1;
  one.stack_types = {"identity"};
  one.n_blocks = {2};
  one.validate();
}

}  // namespace nbeats_test
}  // namespace shoal
