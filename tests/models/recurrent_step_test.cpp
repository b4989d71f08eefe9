// RNN, GRU and LSTM with recurrent=True (models/recurrent_forecast.h): gradients in double
// against central differences (one output per value and three: the LSTM's projection wider than
// one), and against neuralforecast's goldens of bench/peers/recurrent_golden.py: the initial
// weights of random_seed 1 (the LSTM's proj_size weights, the GRU's and RNN's proj Linear), the
// float64 forward and gradients of a training window shifted by one, the step-by-step forecasts
// of an inference window (each fed back; MQLoss's mean), and 20 float32 Adam steps.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "shoal/models/gru.h"
#include "shoal/models/lstm.h"
#include "shoal/models/rnn.h"
#include "support/forecast_golden.h"
#include "support/gradcheck.h"

namespace shoal {
namespace recurrent_step_test {

using namespace models;
using golden::Golden;
using nlohmann::json;

template <class Model>
typename Model::Config golden_config(const json& m) {
  typename Model::Config c = golden::config_of<Model>(m);
  c.recurrent = true;
  c.h_train = m.at("h_train");
  c.inference_input_size = m.value("inference_input_size", Index{0});
  return c;
}

template <class Model>
class RecurrentStep : public ::testing::Test {};
using Models = ::testing::Types<RNN<double>, GRU<double>, LSTM<double>>;
TYPED_TEST_SUITE(RecurrentStep, Models);

std::vector<double> random(Index n, uint64_t seed) {
  RngStream rng(seed, 1);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& e : v) e = rng.uniform(-2.f, 2.f);
  return v;
}

// Training windows (teacher forcing over L + h_train − 1 steps), exogenous inputs of every kind,
// an inference length of its own, two layers with dropout between them.
TYPED_TEST(RecurrentStep, GradientsMatchCentralDifferences) {
  for (const Index outputs : {1, 3})
    for (const Index h_train : {1, 3}) {
      typename TypeParam::Config c;
      c.encoder_hidden_size = 5;
      c.encoder_n_layers = 2;
      c.encoder_dropout = 0.2;
      c.recurrent = true;
      c.h_train = h_train;
      c.inference_input_size = 4;
      c.set_shape({.h = 3,
                   .input_size = 6,
                   .hist_exog = 2,
                   .futr_exog = 1,
                   .stat_exog = 2,
                   .outputs = outputs});
      TypeParam m(c);
      const Index b = 3, li = m.window_input_size(true), hz = m.window_horizon(true);
      ASSERT_EQ(li, 7);
      ASSERT_EQ(hz, h_train);
      Planner planner;
      m.plan(planner, b);
      Arena arena(std::move(planner));
      RngStream rng(3, kInitStream);
      m.init(rng);
      const std::vector<double> y = random(b * li, 1), out = random(b * hz, 2),
                                hist = random(b * 2 * li, 3), futr = random(b * (li + hz), 4),
                                stat = random(2, 5);
      const ForecastInputs<double> in{.batch = b,
                                      .insample_y = y.data(),
                                      .hist_exog = hist.data(),
                                      .futr_exog = futr.data(),
                                      .stat_exog = stat.data(),
                                      .outsample_y = out.data()};
      std::vector<testing::GradVar> vars;
      m.for_each_param([&](const std::string& name, Param<double>& p) {
        vars.push_back({name, p.value.data, p.grad.data, p.value.numel(), true});
      });
      const Ctx ctx{.training = true, .seed = 9, .step = 2};
      const Index n = b * hz * outputs;
      std::vector<double> dy(static_cast<size_t>(n));
      double* o = m.forward(ctx, in).data;
      const auto res = testing::gradcheck(
          vars, {{o, dy.data(), n}}, [&] { m.forward(ctx, in); },
          [&] { m.backward(ctx, in, ConstMat<double>(dy.data(), b * hz, outputs)); });
      EXPECT_LE(res.max_rel_error, 1e-6)
          << "outputs " << outputs << " h_train " << h_train << ": " << res.worst;
    }
}

// Golden `name`: init, forward and gradients of a training window, step-by-step forecasts.
template <class Model>
void check_golden(const std::string& name) {
  const Golden g(name + "_grad");
  Model m(golden_config<Model>(g.meta()));
  const Index li = m.window_input_size(true), hz = m.window_horizon(true), H = m.horizon(),
              M = m.config().outputs;
  auto get = [&](const std::string& k) { return g.has(k) ? g.get(k) : std::vector<double>{}; };
  auto ptr = [](const std::vector<double>& v) { return v.empty() ? nullptr : v.data(); };
  const std::vector<double> y = get("inputs/insample_y"), out = get("inputs/outsample_y"),
                            hist = get("inputs/hist_exog"), futr = get("inputs/futr_exog"),
                            stat = get("inputs/stat_exog");
  const Index b = Index(y.size()) / li;
  ASSERT_EQ(Index(out.size()), b * hz);
  Planner planner;
  m.plan(planner, b);
  Arena arena(std::move(planner));
  RngStream rng(1, kInitStream, Generator::kTorchCpu);
  m.init(rng);
  golden::expect_torch_weights<Model, double>(m, g);
  golden::load_weights<Model, double>(m, arena, g);
  const ForecastInputs<double> in{.batch = b,
                                  .insample_y = y.data(),
                                  .hist_exog = ptr(hist),
                                  .futr_exog = ptr(futr),
                                  .stat_exog = ptr(stat),
                                  .outsample_y = out.data()};
  const Ctx ctx{.training = true, .seed = 1, .step = 0};
  const MatView<double> o = m.forward(ctx, in);
  ASSERT_EQ(o.rows * o.cols, b * hz * M);
  EXPECT_LE(golden::rel_error(o.data, g.get("output")), 1e-10) << name;
  std::memset(arena.region_base(Region::kGrads), 0, arena.region_bytes(Region::kGrads));
  const std::vector<double> r = g.get("r");
  m.backward(ctx, in, ConstMat<double>(r.data(), b * hz, M));
  m.for_each_param([&](const std::string& pname, Param<double>& p) {
    EXPECT_LE(golden::rel_error(p.grad.data, g.get("grads/" + pname)), 1e-10)
        << name << " " << pname;
  });
  const std::vector<double> dy = get("decode_inputs/insample_y"),
                            dhist = get("decode_inputs/hist_exog"),
                            dfutr = get("decode_inputs/futr_exog"),
                            dstat = get("decode_inputs/stat_exog");
  ASSERT_EQ(Index(dy.size()), b * m.window_input_size(false));
  const ForecastInputs<double> din{.batch = b,
                                   .insample_y = dy.data(),
                                   .hist_exog = ptr(dhist),
                                   .futr_exog = ptr(dfutr),
                                   .stat_exog = ptr(dstat)};
  const MatView<double> d = m.forward(Ctx{.training = false}, din);
  ASSERT_EQ(d.rows * d.cols, b * H * M);
  const double err = golden::rel_error(d.data, g.get("decode"));

  EXPECT_LE(err, 1e-10) << name << ": step-by-step forecasts";
  std::cout << "[golden] " << name << " decode rel err " << err << "\n";
}

// 20 float32 Adam steps with MAE on every training window of the stored series.
template <class Model>
void check_training(const std::string& name) {
  using FModel = RecurrentForecast<float, typename Model::Config>;
  const Golden g(name + "_train");
  const json& meta = g.meta();
  FModel m(golden_config<FModel>(meta));
  const Index li = m.window_input_size(true), hz = m.window_horizon(true);
  const Index nx = meta.at("hist"), nf = meta.at("futr"), tlen = meta.at("series_length");
  const std::vector<Index> starts = meta.at("starts").get<std::vector<Index>>();
  const Index b = Index(starts.size());
  const std::vector<double> y = g.get("series/y");
  std::vector<double> hist, futr, statd;
  if (nx > 0) hist = g.get("series/hist");
  if (nf > 0) futr = g.get("series/futr");
  if (g.has("series/stat")) statd = g.get("series/stat");
  const std::vector<float> stat(statd.begin(), statd.end());
  train::ForecastTrainer<FModel, float> trainer(
      m, {.max_batch = b, .seed = 1, .adam = {.lr = meta.at("lr").get<double>()}});
  golden::expect_torch_weights<FModel, float>(m, g);
  auto at = [](Index i) { return size_t(i); };
  std::vector<float> ins(at(b * li)), tgt(at(b * hz)), mask(tgt.size(), 1.f), hx(at(b * nx * li)),
      fx(at(b * nf * (li + hz)));
  for (Index w = 0; w < b; ++w) {
    const Index s = starts[at(w)];
    for (Index t = 0; t < li + hz; ++t) {
      const float v = float(y[at(s + t)]);
      if (t < li) {
        ins[at(w * li + t)] = v;
        for (Index x = 0; x < nx; ++x)
          hx[at((w * nx + x) * li + t)] = float(hist[at(x * tlen + s + t)]);
      } else {
        tgt[at(w * hz + t - li)] = v;
      }
      for (Index f = 0; f < nf; ++f)
        fx[at((w * nf + f) * (li + hz) + t)] = float(futr[at(f * tlen + s + t)]);
    }
  }
  const ForecastInputs<float> in{.batch = b,
                                 .insample_y = ins.data(),
                                 .hist_exog = nx > 0 ? hx.data() : nullptr,
                                 .futr_exog = nf > 0 ? fx.data() : nullptr,
                                 .stat_exog = stat.empty() ? nullptr : stat.data(),
                                 .outsample_y = tgt.data()};
  const json& want = meta.at("losses");
  double worst = 0;
  for (size_t s = 0; s < want.size(); ++s) {
    const double loss = trainer.train_step(in, ConstMat<float>(tgt.data(), b * hz, 1),
                                           ConstMat<float>(mask.data(), b * hz, 1));
    const double ref = want[s].get<double>(), rel = std::abs(loss - ref) / std::abs(ref);
    worst = std::max(worst, rel);
    EXPECT_LE(rel, 2e-6 * (1.0 + double(s)))
        << name << " step " << s << ": shoal " << loss << ", neuralforecast " << ref;
  }
  std::cout << "[golden] " << name << " 20-step loss max rel err " << worst << "\n";
}

TYPED_TEST(RecurrentStep, MatchesNeuralforecast) {
  const std::string kind(TypeParam::Config::kKind.name);
  check_golden<TypeParam>(kind + "_recurrent");
  if (kind == "lstm") check_golden<TypeParam>("lstm_recurrent_mq3");
  check_training<TypeParam>(kind + "_recurrent");
}

}  // namespace recurrent_step_test
}  // namespace shoal
