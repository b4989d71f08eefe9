// NHITS: parity with neuralforecast 3.3.0 (init for a random_seed, float64 forward and
// gradients, from tests/golden/nhits.json written by bench/peers/blocks_golden.py) and gradient
// checks in double, dropout and every activation path included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/models/nhits.h"
#include "shoal/train/forecast_trainer.h"
#include "support/blocks_golden.h"
#include "support/gradcheck.h"

namespace shoal {
namespace nhits_test {

using models::ForecastInputs;
using models::NHITS;
using Vec = std::vector<double>;

// neuralforecast's keyword arguments, its defaults for the ones a case leaves out.
template <class T>
typename NHITS<T>::Config config_of(const nlohmann::json& kw) {
  typename NHITS<T>::Config c;
  c.h = kw.at("h");
  c.input_size = kw.at("input_size");
  c.mlp_units.clear();
  for (const auto& pair : kw.at("mlp_units"))
    for (const auto& u : pair) c.mlp_units.push_back(u.get<int64_t>());
  if (kw.contains("stack_types")) c.stack_types = kw["stack_types"].get<std::vector<std::string>>();
  if (kw.contains("n_blocks")) c.n_blocks = kw["n_blocks"].get<std::vector<int64_t>>();
  c.n_pool_kernel_size = kw.at("n_pool_kernel_size").get<std::vector<int64_t>>();
  c.n_freq_downsample = kw.at("n_freq_downsample").get<std::vector<int64_t>>();
  if (kw.contains("pooling_mode")) c.pooling_mode = kw["pooling_mode"];
  if (kw.contains("interpolation_mode")) c.interpolation_mode = kw["interpolation_mode"];
  if (kw.contains("activation")) c.activation = kw["activation"];
  c.hist_exog = kw.contains("hist_exog_list") ? Index(kw["hist_exog_list"].size()) : 0;
  c.futr_exog = kw.contains("futr_exog_list") ? Index(kw["futr_exog_list"].size()) : 0;
  c.stat_exog = kw.contains("stat_exog_list") ? Index(kw["stat_exog_list"].size()) : 0;
  return c;
}

TEST(NhitsGolden, InitMatchesNeuralforecastForItsSeed) {
  const nlohmann::json& g = golden::blocks_golden("nhits");
  ASSERT_EQ(g.size(), 6u);
  golden::expect_init<NHITS>(g, config_of<double>, "init/");
}

TEST(NhitsGolden, ForwardAndGradientsMatchNeuralforecast) {
  golden::expect_forward_and_grads<NHITS>(golden::blocks_golden("nhits"), config_of<double>);
}

struct GradCase {
  std::string activation, pooling, interpolation;
  double dropout;
  bool exog = false;
};

TEST(NhitsGrad, MatchesCentralDifferences) {
  for (const GradCase& g : {GradCase{"ReLU", "MaxPool1d", "linear", 0.3},
                            GradCase{"Sigmoid", "AvgPool1d", "nearest", 0.2},
                            GradCase{"PReLU", "MaxPool1d", "linear", 0.0},
                            GradCase{"LeakyReLU", "AvgPool1d", "linear", 0.25},
                            GradCase{"Softplus", "MaxPool1d", "nearest", 0.0},
                            GradCase{"ReLU", "AvgPool1d", "linear", 0.1, true}}) {
    NHITS<double>::Config cfg;
    cfg.h = 5;
    cfg.input_size = 9;
    cfg.n_blocks = {1, 2, 1};
    cfg.mlp_units = {6, 6, 6, 7};
    cfg.n_pool_kernel_size = {2, 4, 1};
    cfg.n_freq_downsample = {3, 2, 1};
    cfg.activation = g.activation;
    cfg.pooling_mode = g.pooling;
    cfg.interpolation_mode = g.interpolation;
    cfg.dropout_prob_theta = g.dropout;
    if (g.exog) {
      cfg.hist_exog = 2;
      cfg.futr_exog = 1;
      cfg.stat_exog = 1;
    }
    NHITS<double> model(cfg);
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
    testing::fill_uniform(y.data(), static_cast<int64_t>(y.size()), 17, -2, 2);
    Vec hist(size_t(B * 2 * cfg.input_size)), futr(size_t(B * (cfg.input_size + cfg.h))),
        stat{-0.3};
    testing::fill_uniform(hist.data(), static_cast<int64_t>(hist.size()), 47);
    testing::fill_uniform(futr.data(), static_cast<int64_t>(futr.size()), 53);
    ForecastInputs<double> in;
    in.batch = B;
    in.insample_y = y.data();
    if (g.exog) {
      in.hist_exog = hist.data();
      in.futr_exog = futr.data();
      in.stat_exog = stat.data();
    }
    Ctx ctx;
    ctx.seed = 9;
    ctx.step = 4;
    const auto res = testing::gradcheck(
        vars, {{out.data(), dout.data(), static_cast<int64_t>(out.size())}},
        [&] {
          const ConstMat<double> o = model.forward(ctx, in);
          std::copy(o.data, o.data + o.rows, out.begin());
        },
        [&] { model.backward(ctx, in, ConstMat<double>(dout.data(), B * cfg.h, 1)); });
    EXPECT_LE(res.max_rel_error, 1e-6) << g.activation << " " << res.worst;
  }
}

static_assert(train::WindowModel<NHITS<float>, float>);

// Trains on windows of a noisy sine with ForecastTrainer: the loss falls, and a batch run in
// chunks (dropout masks drawn per window of the whole batch) gives the unchunked losses.
std::vector<double> train_sine(Index chunk_windows) {
  NHITS<float>::Config cfg;
  cfg.h = 6;
  cfg.input_size = 18;
  cfg.mlp_units = {32, 32, 32, 32};
  cfg.dropout_prob_theta = 0.1;
  NHITS<float> model(cfg);
  const Index B = 16, L = cfg.input_size, H = cfg.h;
  train::ForecastTrainer<NHITS<float>, float> trainer(
      model, {.max_batch = B, .seed = 3, .adam = {.lr = 3e-3}, .chunk_windows = chunk_windows});
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
  return losses;
}

TEST(NhitsTrain, LearnsASineAndChunksAgree) {
  const auto whole = train_sine(0), chunked = train_sine(4);
  double first = 0, last = 0;
  for (size_t i = 0; i < 10; ++i) {
    first += whole[i];
    last += whole[whole.size() - 1 - i];
  }
  EXPECT_LT(last, 0.3 * first) << "first 10 steps " << first / 10 << ", last 10 " << last / 10;
  // Step 0's loss has the dropout masks (a chunk must draw its windows' part of the batch's),
  // the next ones the summed gradients. Chunks run other GEMM shapes and sum in another order,
  // and Adam's first steps (m/√v) turn those last bits of near-zero gradients into full steps,
  // so only the first steps are compared closely.
  for (size_t i = 0; i < 3; ++i)
    ASSERT_NEAR(chunked[i], whole[i], 1e-5 * std::max(1.0, whole[i])) << "step " << i;
}

TEST(NhitsConfig, RejectsWhatNeuralforecastRejects) {
  NHITS<float>::Config c;
  c.h = 4;
  c.input_size = 8;
  c.validate();
  auto bad = [&](auto mutate) {
    NHITS<float>::Config b = c;
    mutate(b);
    EXPECT_THROW(b.validate(), Error);
  };
  bad([](auto& b) { b.stack_types = {"trend", "identity", "identity"}; });
  bad([](auto& b) { b.n_blocks = {1, 1}; });
  bad([](auto& b) { b.mlp_units = {8, 8, 4}; });
  bad([](auto& b) { b.mlp_units = {8, 8, 4, 4}; });  // the pairs do not chain
  bad([](auto& b) { b.n_pool_kernel_size = {0, 2, 1}; });
  bad([](auto& b) { b.dropout_prob_theta = 1.0; });
  bad([](auto& b) { b.activation = "GELU"; });
}

}  // namespace nhits_test
}  // namespace shoal
