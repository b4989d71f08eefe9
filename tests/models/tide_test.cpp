// TiDE: parity with neuralforecast 3.3.0 (init for a random_seed, float64 forward and gradients,
// from tests/golden/tide.json written by bench/peers/blocks_golden.py), gradient checks in
// double with dropout, and a fit through ForecastTrainer whose chunks agree with whole batches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/models/tide.h"
#include "shoal/train/forecast_trainer.h"
#include "support/blocks_golden.h"
#include "support/gradcheck.h"

namespace shoal {
namespace tide_test {

using models::ForecastInputs;
using models::TiDE;
using Vec = std::vector<double>;

// neuralforecast's keyword arguments, its defaults for the ones a case leaves out.
template <class T>
typename TiDE<T>::Config config_of(const nlohmann::json& kw) {
  typename TiDE<T>::Config c;
  c.h = kw.at("h");
  c.input_size = kw.at("input_size");
  c.hidden_size = kw.at("hidden_size");
  c.decoder_output_dim = kw.at("decoder_output_dim");
  c.temporal_decoder_dim = kw.at("temporal_decoder_dim");
  c.dropout = kw.at("dropout");
  if (kw.contains("layernorm")) c.layernorm = kw["layernorm"];
  if (kw.contains("num_encoder_layers")) c.num_encoder_layers = kw["num_encoder_layers"];
  if (kw.contains("num_decoder_layers")) c.num_decoder_layers = kw["num_decoder_layers"];
  if (kw.contains("temporal_width")) c.temporal_width = kw["temporal_width"];
  c.hist_exog = kw.contains("hist_exog_list") ? Index(kw["hist_exog_list"].size()) : 0;
  c.futr_exog = kw.contains("futr_exog_list") ? Index(kw["futr_exog_list"].size()) : 0;
  c.stat_exog = kw.contains("stat_exog_list") ? Index(kw["stat_exog_list"].size()) : 0;
  return c;
}

TEST(TideGolden, InitMatchesNeuralforecastForItsSeed) {
  const nlohmann::json& g = golden::blocks_golden("tide");
  ASSERT_EQ(g.size(), 5u);
  golden::expect_init<TiDE>(g, config_of<double>);
}

TEST(TideGolden, ForwardAndGradientsMatchNeuralforecast) {
  golden::expect_forward_and_grads<TiDE>(golden::blocks_golden("tide"), config_of<double>);
}

TEST(TideGrad, MatchesCentralDifferences) {
  // Variants: 0 layernorm, 1 none, 2 and 3 every exogenous kind without and with layernorm
  // (without, the temporal decoder passes a gradient to the future projection's horizon steps).
  for (const int variant : {0, 1, 2, 3}) {
    const bool layernorm = variant == 0 || variant == 3;
    TiDE<double>::Config cfg;
    cfg.h = 4;
    cfg.input_size = 7;
    cfg.hidden_size = 6;
    cfg.decoder_output_dim = 3;
    cfg.temporal_decoder_dim = 5;
    cfg.dropout = 0.25;
    cfg.layernorm = layernorm;
    cfg.num_encoder_layers = 2;
    cfg.num_decoder_layers = 2;
    if (variant >= 2) {  // every exogenous kind, through both projections
      cfg.temporal_width = 2;
      cfg.hist_exog = 2;
      cfg.futr_exog = 1;
      cfg.stat_exog = 1;
    }
    TiDE<double> model(cfg);
    const Index B = 3;
    Planner planner;
    model.plan(planner, B);
    Arena arena(std::move(planner));
    RngStream rng(2, models::kInitStream, Generator::kTorchCpu);
    model.init(rng);
    std::vector<testing::GradVar> vars;
    model.for_each_param([&](const std::string& key, Param<double>& p) {
      for (auto& v : p.value) v += 0.1 * static_cast<double>(rng.uniform(-1.f, 1.f));
      vars.push_back({key, p.value.data, p.grad.data, p.value.numel(), true});
    });
    Vec y(static_cast<size_t>(B * cfg.input_size)), out(static_cast<size_t>(B * cfg.h)),
        dout(out.size());
    testing::fill_uniform(y.data(), static_cast<int64_t>(y.size()), 23, -2, 2);
    Vec hist(size_t(B * 2 * cfg.input_size)), futr(size_t(B * (cfg.input_size + cfg.h))), stat{0.4};
    testing::fill_uniform(hist.data(), static_cast<int64_t>(hist.size()), 41);
    testing::fill_uniform(futr.data(), static_cast<int64_t>(futr.size()), 43);
    ForecastInputs<double> in;
    in.batch = B;
    in.insample_y = y.data();
    if (variant >= 2) {
      in.hist_exog = hist.data();
      in.futr_exog = futr.data();
      in.stat_exog = stat.data();
    }
    Ctx ctx;
    ctx.seed = 6;
    const auto res = testing::gradcheck(
        vars, {{out.data(), dout.data(), static_cast<int64_t>(out.size())}},
        [&] {
          const ConstMat<double> o = model.forward(ctx, in);
          std::copy(o.data, o.data + o.rows, out.begin());
        },
        [&] { model.backward(ctx, in, ConstMat<double>(dout.data(), B * cfg.h, 1)); });
    EXPECT_LE(res.max_rel_error, 1e-6) << "variant " << variant << " " << res.worst;
  }
}

static_assert(train::WindowModel<TiDE<float>, float>);

std::vector<double> train_sine(Index chunk_windows) {
  TiDE<float>::Config cfg;
  cfg.h = 6;
  cfg.input_size = 18;
  cfg.hidden_size = 32;
  cfg.decoder_output_dim = 4;
  cfg.temporal_decoder_dim = 16;
  cfg.dropout = 0.1;
  TiDE<float> model(cfg);
  const Index B = 16, L = cfg.input_size, H = cfg.h;
  train::ForecastTrainer<TiDE<float>, float> trainer(
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

TEST(TideTrain, LearnsASineAndChunksAgree) {
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

TEST(TideConfig, RejectsOutOfRange) {
  TiDE<float>::Config c;
  c.h = 4;
  c.input_size = 8;
  c.validate();
  auto bad = [&](auto mutate) {
    TiDE<float>::Config b = c;
    mutate(b);
    EXPECT_THROW(b.validate(), Error);
  };
  bad([](auto& b) { b.hidden_size = 0; });
  bad([](auto& b) { b.dropout = 1.0; });
  bad([](auto& b) { b.num_decoder_layers = 0; });
}

}  // namespace tide_test
}  // namespace shoal
