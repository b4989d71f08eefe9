// NHITS, NBEATS, NBEATSx and TiDE with several outputs per forecast value (a multi-output loss:
// MQLoss's quantiles, DistributionLoss's parameters). Parity with neuralforecast 3.3.0 built for
// MQLoss([0.1, 0.5, 0.9]) (tests/golden/<model>_mq3_grad, bench/peers/multi_output_golden.py):
// the torch generator draws the larger output layers bit for bit, and from the golden's weights
// the float64 forward [B, H, M] and every parameter gradient of sum(out · r) match. Gradient
// checks in double with M = 3 cover the paths the goldens do not (nearest interpolation, the
// NBEATSx exogenous basis broadcast over the outputs, TiDE without LayerNorm, dropout).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/models/forecast.h"
#include "shoal/models/nbeats.h"
#include "shoal/models/nbeatsx.h"
#include "shoal/models/nhits.h"
#include "shoal/models/tide.h"
#include "shoal/train/forecast_trainer.h"
#include "support/golden.h"
#include "support/gradcheck.h"

namespace shoal::multi_output_stacked_test {

using golden::fill;
using golden::Golden;
using golden::rel_error;
using models::ForecastInputs;
using nlohmann::json;
using Vec = std::vector<double>;

// The golden's neuralforecast arguments (bench/peers/forecast_golden.py CONFIGS); the stacks
// are neuralforecast's defaults, as are shoal's. Old goldens have no "outputs": one.
template <class Model>
typename Model::Config config_of(const json& m) {
  typename Model::Config c;
  c.h = m.at("h");
  c.input_size = m.at("input_size");
  if constexpr (requires { c.hist_exog; }) {  // NHITS, NBEATSx, TiDE
    c.hist_exog = m.at("hist");
    c.futr_exog = m.at("futr");
    c.stat_exog = m.at("stat");
  }
  if constexpr (requires { c.mlp_units; }) {  // neuralforecast's [[in, out], ...], flattened
    c.mlp_units.clear();
    for (const json& pair : m.at("mlp_units"))
      for (const json& u : pair) c.mlp_units.push_back(u.get<int64_t>());
  }
  if constexpr (requires { c.decoder_output_dim; }) {
    c.hidden_size = m.at("hidden_size");
    c.decoder_output_dim = m.at("decoder_output_dim");
    c.temporal_decoder_dim = m.at("temporal_decoder_dim");
    c.dropout = m.at("dropout");
  }
  c.outputs = m.value("outputs", Index(1));
  return c;
}

// The golden's state_dict minus NBEATS' fixed bases (state here, not parameters).
size_t golden_params(const Golden& g) {
  size_t n = 0;
  for (const std::string& k : g.names_with_prefix("weights/"))
    n += k.find(".basis.") == std::string::npos;
  return n;
}

template <template <class> class M>
void check_mq3(const std::string& kind) {
  const Golden g(kind + "_mq3_grad");
  ASSERT_EQ(g.meta().at("outputs").get<Index>(), 3);
  M<double> m(config_of<M<double>>(g.meta()));
  const Vec y = g.get("inputs/insample_y");
  Vec hist, futr, stat;
  if (g.has("inputs/hist_exog")) hist = g.get("inputs/hist_exog");
  if (g.has("inputs/futr_exog")) futr = g.get("inputs/futr_exog");
  if (g.has("inputs/stat_exog")) stat = g.get("inputs/stat_exog");
  const Index h = m.horizon(), outs = m.config().outputs;
  const Index b = static_cast<Index>(y.size()) / m.config().input_size;
  Planner planner;
  m.plan(planner, b);
  Arena arena(std::move(planner));
  // neuralforecast's random_seed 1 draws the output layers at their M-times size.
  RngStream rng(1, models::kInitStream, Generator::kTorchCpu);
  m.init(rng);
  size_t params = 0;
  m.for_each_param([&](const std::string& name, Param<double>& p) {
    ASSERT_TRUE(g.has("weights/" + name)) << name;
    const Vec want = g.get("weights/" + name);
    ASSERT_EQ(static_cast<size_t>(p.value.numel()), want.size()) << name;
    Index differ = 0;
    for (size_t i = 0; i < want.size(); ++i) differ += p.value.data[i] != want[i];
    EXPECT_EQ(differ, 0) << name << ": elements that differ from torch's draw";
    fill(p.value, want, name);
    ++params;
  });
  EXPECT_EQ(params, golden_params(g));
  const ForecastInputs<double> in{.batch = b,
                                  .insample_y = y.data(),
                                  .hist_exog = hist.empty() ? nullptr : hist.data(),
                                  .futr_exog = futr.empty() ? nullptr : futr.data(),
                                  .stat_exog = stat.empty() ? nullptr : stat.data()};
  const Ctx ctx{.training = true, .seed = 1, .step = 0};
  const MatView<double> out = m.forward(ctx, in);
  ASSERT_EQ(out.rows, b * h);
  ASSERT_EQ(out.cols, outs);
  const Vec want = g.get("output");
  ASSERT_EQ(static_cast<size_t>(out.rows * out.cols), want.size());
  const double out_err = rel_error(out.data, want);
  EXPECT_LE(out_err, 1e-10);
  std::memset(arena.region_base(Region::kGrads), 0, arena.region_bytes(Region::kGrads));
  const Vec r = g.get("r");
  m.backward(ctx, in, ConstMat<double>(r.data(), b * h, outs));
  double worst = 0;
  std::string worst_name;
  m.for_each_param([&](const std::string& name, Param<double>& p) {
    const double e = rel_error(p.grad.data, g.get("grads/" + name));
    EXPECT_LE(e, 1e-10) << name;
    if (e > worst) worst = e, worst_name = name;
  });
  std::cout << "[golden] " << kind << " M=3 output rel err " << out_err << ", worst grad rel err "
            << worst << " (" << worst_name << ")\n";
}

TEST(NhitsMultiOutput, MatchesNeuralforecastMQLoss) {
  check_mq3<models::NHITS>("nhits");
}
TEST(NbeatsMultiOutput, MatchesNeuralforecastMQLoss) {
  check_mq3<models::NBEATS>("nbeats");
}
TEST(NbeatsxMultiOutput, MatchesNeuralforecastMQLoss) {
  check_mq3<models::NBEATSx>("nbeatsx");
}
TEST(TideMultiOutput, MatchesNeuralforecastMQLoss) {
  check_mq3<models::TiDE>("tide");
}

// Central differences of sum(out · r) over every parameter, out [B·H, M]. jitter moves the
// weights off their init (PReLU's shared 0.25, TiDE's zero-bias LayerNorms). inspect runs
// after the check, while the model's arena (its analytic gradients) still lives.
template <class Model>
testing::GradcheckResult gradcheck_model(
    Model& model, const ForecastInputs<double>& proto, double jitter,
    const std::function<void()>& inspect = [] {}) {
  const Index B = proto.batch, H = model.horizon(), M = model.config().outputs;
  Planner planner;
  model.plan(planner, B);
  Arena arena(std::move(planner));
  RngStream rng(2, models::kInitStream, Generator::kTorchCpu);
  model.init(rng);
  std::vector<testing::GradVar> vars;
  model.for_each_param([&](const std::string& key, Param<double>& p) {
    for (auto& v : p.value) v += jitter * static_cast<double>(rng.uniform(-1.f, 1.f));
    vars.push_back({key, p.value.data, p.grad.data, p.value.numel(), true});
  });
  Vec out(static_cast<size_t>(B * H * M)), dout(out.size());
  Ctx ctx;
  ctx.seed = 9;
  ctx.step = 4;
  const auto res = testing::gradcheck(
      vars, {{out.data(), dout.data(), static_cast<int64_t>(out.size())}},
      [&] {
        const ConstMat<double> o = model.forward(ctx, proto);
        EXPECT_EQ(o.rows * o.cols, B * H * M);
        std::copy(o.data, o.data + o.rows * o.cols, out.begin());
      },
      [&] { model.backward(ctx, proto, ConstMat<double>(dout.data(), B * H, M)); });
  inspect();
  return res;
}

// Inputs of B windows in shoal's layouts, with X = 2 historical, F = 1 future, S = 1 static.
struct Inputs {
  Vec y, hist, futr, stat{-0.3};
  Inputs(Index B, Index L, Index H) {
    y.resize(size_t(B * L));
    hist.resize(size_t(B * 2 * L));
    futr.resize(size_t(B * (L + H)));
    testing::fill_uniform(y.data(), int64_t(y.size()), 17, -2, 2);
    testing::fill_uniform(hist.data(), int64_t(hist.size()), 47);
    testing::fill_uniform(futr.data(), int64_t(futr.size()), 53);
  }
  ForecastInputs<double> windows(Index B, bool exog) const {
    ForecastInputs<double> in;
    in.batch = B;
    in.insample_y = y.data();
    if (exog) {
      in.hist_exog = hist.data();
      in.futr_exog = futr.data();
      in.stat_exog = stat.data();
    }
    return in;
  }
};

TEST(NhitsMultiOutput, MatchesCentralDifferences) {
  struct Case {
    std::string interpolation, activation;
    double dropout;
    bool exog;
    Index outputs;
  };
  for (const Case& k :
       {Case{"linear", "ReLU", 0.2, true, 3}, Case{"nearest", "PReLU", 0.0, false, 2},
        Case{"linear", "Tanh", 0.0, false, 3}}) {
    models::NHITS<double>::Config cfg;
    cfg.h = 5;
    cfg.input_size = 9;
    cfg.n_blocks = {1, 2, 1};
    cfg.mlp_units = {6, 6, 6, 7};
    cfg.n_pool_kernel_size = {2, 4, 1};
    cfg.n_freq_downsample = {3, 2, 1};
    cfg.interpolation_mode = k.interpolation;
    cfg.activation = k.activation;
    cfg.dropout_prob_theta = k.dropout;
    cfg.outputs = k.outputs;
    if (k.exog) cfg.hist_exog = 2, cfg.futr_exog = 1, cfg.stat_exog = 1;
    models::NHITS<double> model(cfg);
    const Inputs x(3, cfg.input_size, cfg.h);
    const auto res = gradcheck_model(model, x.windows(3, k.exog), 0.05);
    EXPECT_LE(res.max_rel_error, 1e-6) << k.interpolation << " " << res.worst;
  }
}

TEST(NbeatsMultiOutput, MatchesCentralDifferences) {
  for (const std::string act : {"ReLU", "PReLU"}) {
    models::NBEATS<double>::Config cfg;
    cfg.h = 5;
    cfg.input_size = 9;
    cfg.n_blocks = {1, 2, 1};  // identity, trend, seasonality
    cfg.mlp_units = {6, 6, 6, 7};
    cfg.activation = act;
    cfg.shared_weights = act == "PReLU";
    cfg.outputs = 3;
    models::NBEATS<double> model(cfg);
    const Inputs x(3, cfg.input_size, cfg.h);
    const auto res = gradcheck_model(model, x.windows(3, false), 0.05);
    EXPECT_LE(res.max_rel_error, 1e-6) << act << " " << res.worst;
  }
}

TEST(NbeatsxMultiOutput, MatchesCentralDifferences) {
  for (const double dropout : {0.0, 0.3}) {
    models::NBEATSx<double>::Config cfg;
    cfg.h = 4;
    cfg.input_size = 6;
    cfg.hist_exog = 2;
    cfg.futr_exog = 1;
    cfg.stat_exog = 1;
    // The exogenous blocks' one output is broadcast over the three.
    cfg.stack_types = {"exogenous", "identity", "trend", "seasonality", "exogenous"};
    cfg.n_blocks = {1, 1, 1, 1, 1};
    cfg.mlp_units = {6, 6, 6, 5};
    cfg.activation = dropout > 0 ? "Tanh" : "ReLU";
    cfg.dropout_prob_theta = dropout;
    cfg.outputs = 3;
    models::NBEATSx<double> model(cfg);
    const Inputs x(3, cfg.input_size, cfg.h);
    const auto res = gradcheck_model(model, x.windows(3, true), 0.0);
    EXPECT_LE(res.max_rel_error, 1e-6) << "dropout " << dropout << " " << res.worst;
  }
}

TEST(TideMultiOutput, MatchesCentralDifferences) {
  // With layernorm and M > 1 the temporal decoder's LayerNorm is live: every layer gets a
  // gradient (the one-output shortcut would leave the encoder's at zero).
  for (const bool layernorm : {true, false})
    for (const bool exog : {false, true}) {
      models::TiDE<double>::Config cfg;
      cfg.h = 4;
      cfg.input_size = 7;
      cfg.hidden_size = 6;
      cfg.decoder_output_dim = 3;
      cfg.temporal_decoder_dim = 5;
      cfg.dropout = 0.25;
      cfg.layernorm = layernorm;
      cfg.num_encoder_layers = 2;
      cfg.num_decoder_layers = 2;
      // neuralforecast's default width: a LayerNorm over two projected values is too
      // ill-conditioned for central differences once M > 1 makes the projections live.
      cfg.temporal_width = 4;
      cfg.outputs = 3;
      if (exog) cfg.hist_exog = 2, cfg.futr_exog = 1, cfg.stat_exog = 1;
      models::TiDE<double> model(cfg);
      const Inputs x(3, cfg.input_size, cfg.h);
      double encoder_grad = 0;
      const auto res = gradcheck_model(model, x.windows(3, exog), 0.1, [&] {
        model.for_each_param([&](const std::string& key, Param<double>& p) {
          if (key.starts_with("dense_encoder.0.lin1."))
            for (const double g : p.grad) encoder_grad += std::abs(g);
        });
      });
      EXPECT_LE(res.max_rel_error, 1e-6) << layernorm << exog << " " << res.worst;
      EXPECT_GT(encoder_grad, 0) << "layernorm " << layernorm;
    }
}

// outputs is the loss's, from the shape, and must be at least one.
TEST(StackedMultiOutput, ShapeSetsOutputsAndZeroIsRejected) {
  const models::WindowShape shape{.h = 4, .input_size = 8, .n_series = 1, .outputs = 3};
  models::NHITS<float>::Config a;
  models::NBEATS<float>::Config b;
  models::NBEATSx<float>::Config c;
  models::TiDE<float>::Config d;
  a.set_shape(shape);
  b.set_shape(shape);
  c.set_shape(shape);
  d.set_shape(shape);
  EXPECT_EQ(a.outputs, 3);
  EXPECT_EQ(b.outputs, 3);
  EXPECT_EQ(c.outputs, 3);
  EXPECT_EQ(d.outputs, 3);
  a.outputs = b.outputs = c.outputs = d.outputs = 0;
  EXPECT_THROW(a.validate(), Error);
  EXPECT_THROW(b.validate(), Error);
  EXPECT_THROW(c.validate(), Error);
  EXPECT_THROW(d.validate(), Error);
}

static_assert(train::WindowModel<models::NHITS<float>, float>);

}  // namespace shoal::multi_output_stacked_test
