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
#include "support/gradcheck.h"

namespace shoal {
namespace nbeatsx_test {

using models::ForecastInputs;
using models::NBEATSx;
using Vec = std::vector<double>;

const nlohmann::json& golden() {
  static const nlohmann::json j = [] {
    const auto path = std::filesystem::path(SHOAL_GOLDEN_DIR) / "nbeatsx.json";
    std::ifstream in(path);
    if (!in) throw Error("cannot open golden " + path.string());
    return nlohmann::json::parse(in);
  }();
  return j;
}

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

void expect_near(const Vec& got, const Vec& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << what << "[" << i << "]";
}

template <class T>
Vec values(const TensorView<T>& v) {
  return {v.begin(), v.end()};
}

// [B, steps, C] (torch, time-major) → [B, C, steps] (shoal's ForecastInputs).
Vec channel_major(const Vec& v, Index b, Index steps, Index c) {
  Vec out(v.size());
  for (Index w = 0; w < b; ++w)
    for (Index t = 0; t < steps; ++t)
      for (Index k = 0; k < c; ++k)
        out[size_t((w * c + k) * steps + t)] = v[size_t((w * steps + t) * c + k)];
  return out;
}

TEST(NbeatsxGolden, InitMatchesNeuralforecastForItsSeed) {
  ASSERT_EQ(golden().size(), 4u);
  for (const auto& [name, c] : golden().items()) {
    NBEATSx<float> model(config_of<float>(c.at("config")));
    Planner planner;
    model.plan(planner, 4);
    Arena arena(std::move(planner));
    RngStream rng(c.at("config").at("random_seed").get<uint64_t>(), models::kInitStream,
                  Generator::kTorchCpu);
    model.init(rng);
    size_t n = 0;
    model.for_each_param([&](const std::string& key, Param<float>& p) {
      ASSERT_TRUE(c.contains("init/" + key)) << name << " has no " << key;
      expect_near(values(p.value), c.at("init/" + key).get<Vec>(), 0, name + " " + key);
      ++n;
    });
    size_t keys = 0;
    for (const auto& [k, v] : c.items()) keys += k.rfind("weights/", 0) == 0;
    EXPECT_EQ(n, keys) << name;
  }
}

TEST(NbeatsxGolden, ForwardAndGradientsMatchNeuralforecast) {
  for (const auto& [name, c] : golden().items()) {
    const auto cfg = config_of<double>(c.at("config"));
    NBEATSx<double> model(cfg);
    const Index B = 4, L = cfg.input_size, H = cfg.h;
    Planner planner;
    model.plan(planner, B);
    Arena arena(std::move(planner));
    RngStream rng(1, models::kInitStream);
    model.init(rng);  // the bases; the weights come from the golden
    model.for_each_param([&](const std::string& key, Param<double>& p) {
      const Vec w = c.at("weights/" + key).get<Vec>();
      ASSERT_EQ(static_cast<Index>(w.size()), p.value.numel()) << key;
      std::copy(w.begin(), w.end(), p.value.data);
      std::fill(p.grad.begin(), p.grad.end(), 0.0);
    });
    const Vec y = c.at("insample_y").get<Vec>();
    const Vec hist = cfg.hist_exog > 0
                         ? channel_major(c.at("hist_exog").get<Vec>(), B, L, cfg.hist_exog)
                         : Vec{};
    const Vec futr = cfg.futr_exog > 0
                         ? channel_major(c.at("futr_exog").get<Vec>(), B, L + H, cfg.futr_exog)
                         : Vec{};
    const Vec stat = cfg.stat_exog > 0 ? c.at("stat_exog").get<Vec>() : Vec{};
    Vec dy = c.at("dy").get<Vec>();
    ForecastInputs<double> in;
    in.batch = B;
    in.insample_y = y.data();
    in.hist_exog = hist.empty() ? nullptr : hist.data();
    in.futr_exog = futr.empty() ? nullptr : futr.data();
    in.stat_exog = stat.empty() ? nullptr : stat.data();
    const Ctx ctx;
    const ConstMat<double> out = model.forward(ctx, in);
    ASSERT_EQ(out.rows, B * H);
    expect_near(Vec(out.data, out.data + out.rows), c.at("forecast").get<Vec>(), 1e-12,
                name + " forecast");
    model.backward(ctx, in, ConstMat<double>(dy.data(), B * H, 1));
    model.for_each_param([&](const std::string& key, Param<double>& p) {
      expect_near(values(p.grad), c.at("grads/" + key).get<Vec>(), 1e-11, name + " grad " + key);
    });
  }
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
