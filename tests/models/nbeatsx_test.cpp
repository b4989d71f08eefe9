// NBEATSx: parity with neuralforecast 3.3.0 with historical, future and static exogenous inputs
// (init for a random_seed, float64 forward and gradients, from tests/golden/nbeatsx.json
// written by bench/peers/blocks_golden.py), gradient checks in double with dropout, and a fit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/models/nbeatsx.h"
#include "shoal/train/forecast_trainer.h"
#include "support/blocks_golden.h"
#include "support/gradcheck.h"

namespace shoal {
namespace nbeatsx_test {

using models::ForecastInputs;
using models::NBEATSx;
using Vec = std::vector<double>;

Index list_size(const nlohmann::json& kw, const char* key) {
  return kw.contains(key) ? static_cast<Index>(kw[key].size()) : 0;
}

// neuralforecast's keyword arguments, its defaults for the ones a case leaves out.
template <class T>
typename NBEATSx<T>::Config config_of(const nlohmann::json& kw) {
  typename NBEATSx<T>::Config c;
  c.h = kw.at("h");
  c.input_size = kw.at("input_size");
  c.hist_exog = list_size(kw, "hist_exog_list");
  c.futr_exog = list_size(kw, "futr_exog_list");
  c.stat_exog = list_size(kw, "stat_exog_list");
  c.mlp_units.clear();
  for (const auto& pair : kw.at("mlp_units"))
    for (const auto& u : pair) c.mlp_units.push_back(u.get<int64_t>());
  if (kw.contains("stack_types")) c.stack_types = kw["stack_types"].get<std::vector<std::string>>();
  if (kw.contains("n_blocks")) c.n_blocks = kw["n_blocks"].get<std::vector<int64_t>>();
  if (kw.contains("n_polynomials")) c.n_polynomials = kw["n_polynomials"];
  if (kw.contains("activation")) c.activation = kw["activation"];
  if (kw.contains("shared_weights")) c.shared_weights = kw["shared_weights"];
  return c;
}

TEST(NbeatsxGolden, InitMatchesNeuralforecastForItsSeed) {
  const nlohmann::json& g = golden::blocks_golden("nbeatsx");
  ASSERT_EQ(g.size(), 4u);
  golden::expect_init<NBEATSx>(g, config_of<double>);
}

TEST(NbeatsxGolden, ForwardAndGradientsMatchNeuralforecast) {
  golden::expect_forward_and_grads<NBEATSx>(golden::blocks_golden("nbeatsx"), config_of<double>);
}

TEST(NbeatsxGrad, MatchesCentralDifferences) {
  for (const double dropout : {0.0, 0.3}) {
    NBEATSx<double>::Config cfg;
    cfg.h = 4;
    cfg.input_size = 6;
    cfg.hist_exog = 2;
    cfg.futr_exog = 1;
    cfg.stat_exog = 1;
    cfg.stack_types = {"exogenous", "identity", "trend", "seasonality", "exogenous"};
    cfg.n_blocks = {1, 1, 1, 1, 1};
    cfg.mlp_units = {6, 6, 6, 5};
    cfg.activation = dropout > 0 ? "Tanh" : "ReLU";
    cfg.dropout_prob_theta = dropout;
    NBEATSx<double> model(cfg);
    const Index B = 3, L = cfg.input_size, H = cfg.h;
    Planner planner;
    model.plan(planner, B);
    Arena arena(std::move(planner));
    RngStream rng(2, models::kInitStream, Generator::kTorchCpu);
    model.init(rng);
    std::vector<testing::GradVar> vars;
    model.for_each_param([&](const std::string& key, Param<double>& p) {
      vars.push_back({key, p.value.data, p.grad.data, p.value.numel(), true});
    });
    Vec y(size_t(B * L)), hist(size_t(B * 2 * L)), futr(size_t(B * (L + H))), stat{0.7},
        out(size_t(B * H)), dout(out.size());
    testing::fill_uniform(y.data(), int64_t(y.size()), 29, -2, 2);
    testing::fill_uniform(hist.data(), int64_t(hist.size()), 31);
    testing::fill_uniform(futr.data(), int64_t(futr.size()), 37);
    ForecastInputs<double> in;
    in.batch = B;
    in.insample_y = y.data();
    in.hist_exog = hist.data();
    in.futr_exog = futr.data();
    in.stat_exog = stat.data();
    Ctx ctx;
    ctx.seed = 4;
    const auto res = testing::gradcheck(
        vars, {{out.data(), dout.data(), static_cast<int64_t>(out.size())}},
        [&] {
          const ConstMat<double> o = model.forward(ctx, in);
          std::copy(o.data, o.data + o.rows, out.begin());
        },
        [&] { model.backward(ctx, in, ConstMat<double>(dout.data(), B * H, 1)); });
    EXPECT_LE(res.max_rel_error, 1e-6) << "dropout " << dropout << " " << res.worst;
  }
}

static_assert(train::WindowModel<NBEATSx<float>, float>);

TEST(NbeatsxConfig, RejectsWhatNeuralforecastRejects) {
  NBEATSx<float>::Config c;
  c.h = 4;
  c.input_size = 8;
  c.validate();
  auto bad = [&](auto mutate) {
    NBEATSx<float>::Config b = c;
    mutate(b);
    EXPECT_THROW(b.validate(), Error);
  };
  bad([](auto& b) { b.stack_types = {"mystery", "trend", "seasonality"}; });
  bad([](auto& b) { b.h = 1; });
  bad([](auto& b) { b.dropout_prob_theta = 1.0; });
  NBEATSx<float>::Config x = c;
  x.stack_types = {"exogenous"};
  x.n_blocks = {1};
  EXPECT_THROW(NBEATSx<float>{x}, Error);  // no future or static exogenous to expand on
}

}  // namespace nbeatsx_test
}  // namespace shoal
