// The checks every registered forecasting model goes through, one typed suite over them all:
// its list equals the registry's neural models; gradients match central differences in double,
// at its small defaults and in the option variants that reach its other paths, each with one
// output per value and with three; a batch run in chunks of windows gives the whole batch's
// forecasts and gradients; its kind refuses what it cannot take; and where the peer scripts
// wrote its goldens, its initial weights, forward, gradients (one output and MQLoss's three)
// and first 20 training losses match neuralforecast's (tests/support/forecast_golden.h,
// tests/support/blocks_golden.h). The models are the registry's own list
// (models/forecast_models.h): a model added there needs nothing else here but its golden files.
// The fits through the registry run every registered model too (its names from
// tests/support/registry_models.h): predict from saved weights
// (tests/train/forecast_weights_test.cpp) and 1 against 2 threads
// (tests/train/global_fit_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/core/options.h"
#include "shoal/core/rng.h"
#include "shoal/models/forecast_models.h"
#include "shoal/train/forecast_registry.h"
#include "shoal/train/forecast_trainer.h"
#include "support/blocks_golden.h"
#include "support/exog_grads.h"
#include "support/forecast_golden.h"
#include "support/gradcheck.h"

namespace shoal {
namespace registry_models_test {

using namespace models;

template <class... M>
struct TypeList {
  using Gtest = ::testing::Types<M...>;
  static std::vector<std::tuple<std::string_view, std::string_view, bool>> kinds() {
    return {{M::Config::kKind.name, M::Config::kKind.class_name, M::Config::kKind.multivariate}...};
  }
};
// The registry's own list (models/forecast_models.h).
using ModelTypes = ForecastModels<TypeList, double>;

TEST(RegistryModels, TheSuiteCoversEveryRegisteredModel) {
  std::set<std::tuple<std::string, std::string, bool>> registered, listed;
  for (const train::ForecastModel& m : train::forecast_models())
    if (m.neural)
      registered.insert({std::string(m.name), std::string(m.class_name), m.multivariate});
  for (const auto& [name, class_name, multivariate] : ModelTypes::kinds())
    listed.insert({std::string(name), std::string(class_name), multivariate});
  EXPECT_EQ(listed, registered) << "the registry serves models/forecast_models.h's list, with "
                                   "each model's kind";
}

// The trainer's concept holds for every model (train/forecast_trainer.h).
template <class... M>
struct AllWindowModels : std::bool_constant<(train::WindowModel<M, float> && ...)> {};
static_assert(ForecastModels<AllWindowModels, float>::value);

// A small shape every model takes: odd sizes, every exogenous kind its kind names, two series
// for a multivariate model.
template <class Model>
WindowShape small_shape() {
  constexpr ForecastKind kind = Model::Config::kKind;
  return {.h = 3,
          .input_size = 7,
          .n_series = kind.multivariate ? 2 : 1,
          .hist_exog = kind.hist_exog ? 2 : 0,
          .futr_exog = kind.futr_exog ? 1 : 0,
          .stat_exog = kind.stat_exog ? 2 : 0};
}

// The model's defaults, with its widths cut down so that the checks stay quick.
template <class Model>
typename Model::Config small_config() {
  typename Model::Config c;
  if constexpr (requires { c.mlp_units; }) c.mlp_units = {6, 6, 6, 6};
  if constexpr (requires { c.hidden_size; }) c.hidden_size = 6;
  if constexpr (requires { c.d_ff; }) {  // heads 3 wide, a narrow feed-forward
    c.n_heads = 2;
    c.d_ff = 5;
  }
  if constexpr (requires { c.patch_len; }) {  // PatchTST: 4 patches of 3, two layers
    c.n_heads = 2;
    c.linear_hidden_size = 5;
    c.encoder_layers = 2;
    c.patch_len = 3;
    c.stride = 2;
  }
  if constexpr (requires { c.ff_dim; }) c.ff_dim = 5;
  if constexpr (requires { c.moving_avg_window; }) c.moving_avg_window = 3;
  if constexpr (requires { c.decoder_output_dim; }) {
    c.decoder_output_dim = 3;
    c.temporal_decoder_dim = 4;
  }
  if constexpr (requires { c.encoder_hidden_size; }) {
    c.encoder_hidden_size = 5;
    c.decoder_hidden_size = 6;
  }
  c.set_shape(small_shape<Model>());
  return c;
}

// Random windows in shoal's layouts (models/forecast.h), with their targets (which a recurrent
// model trained step by step reads).
struct Windows {
  std::vector<double> y, hist, futr, stat, out;
  Windows(const WindowShape& s, Index b, uint64_t seed) {
    RngStream rng(seed, 1);
    auto fill = [&](std::vector<double>& v, Index count) {
      v.resize(size_t(count));
      for (double& e : v) e = rng.uniform(-2.f, 2.f);
    };
    const Index n = s.n_series, l = s.input_size;
    fill(y, b * l * n);
    fill(hist, b * s.hist_exog * l * n);
    fill(futr, b * s.futr_exog * (l + s.h) * n);
    fill(stat, n * s.stat_exog);
    fill(out, b * s.h * n);
  }
  ForecastInputs<double> inputs(Index b) const {
    return {.batch = b,
            .insample_y = y.data(),
            .hist_exog = hist.empty() ? nullptr : hist.data(),
            .futr_exog = futr.empty() ? nullptr : futr.data(),
            .stat_exog = stat.empty() ? nullptr : stat.data(),
            .outsample_y = out.data()};
  }
};

// Model over another element type: NLinear<double> → NLinear<float>.
template <class Model, class T>
struct Rebind;
template <template <class> class M, class U, class T>
struct Rebind<M<U>, T> {
  using type = M<T>;
};
template <template <class, class> class M, class U, class C, class T>
struct Rebind<M<U, C>, T> {
  using type = M<T, C>;
};

template <class Model>
class RegistryModel : public ::testing::Test {
 protected:
  static constexpr Index kBatch = 4;
  RegistryModel() : model(small_config<Model>()) {
    Planner planner;
    model.plan(planner, kBatch);
    arena = Arena(std::move(planner));
    RngStream rng(3, kInitStream);
    model.init(rng);
  }
  Index out_size(Index b) const { return b * model.horizon() * model.n_series(); }

  Model model;
  Arena arena;
};
TYPED_TEST_SUITE(RegistryModel, ModelTypes::Gtest);

// Model's template: NHITS<double> → NHITS, RecurrentForecast<double, C> → RecurrentForecast<·, C>.
template <class Model>
struct TemplateOf;
template <template <class> class M, class U>
struct TemplateOf<M<U>> {
  template <class T>
  using type = M<T>;
};
template <template <class, class> class M, class U, class C>
struct TemplateOf<M<U, C>> {
  template <class T>
  using type = M<T, C>;
};

// The variants the gradient check runs besides a model's small defaults: the paths those leave
// out (activations, poolings, interpolations, bases, shared weights, dropout, stacks, shapes and
// exogenous inputs), as option overrides in neuralforecast's names (shape keys: h, input_size,
// hist_exog, futr_exog, stat_exog, outputs; "batch": windows; "perturb": parameters moved off their
// init, so that a LayerNorm or RevIN at 1/0 exercises every term).
const nlohmann::json& grad_variants(std::string_view kind) {
  static const nlohmann::json all = nlohmann::json::parse(R"({
    "nlinear": [{"h": 1, "input_size": 2, "batch": 1}, {"h": 7, "input_size": 9, "batch": 2},
                {"h": 9, "input_size": 7}, {"h": 8, "input_size": 16, "batch": 5}],
    "dlinear": [{"h": 1, "input_size": 2, "moving_avg_window": 1, "batch": 1},
                {"h": 7, "input_size": 9, "moving_avg_window": 25, "batch": 2},
                {"h": 9, "input_size": 7, "moving_avg_window": 5},
                {"h": 8, "input_size": 16, "moving_avg_window": 7, "batch": 5}],
    "nhits": [{"h": 5, "input_size": 9, "n_blocks": [1, 2, 1], "n_pool_kernel_size": [2, 4, 1],
               "n_freq_downsample": [3, 2, 1], "dropout_prob_theta": 0.3},
              {"activation": "Sigmoid", "pooling_mode": "AvgPool1d",
               "interpolation_mode": "nearest", "dropout_prob_theta": 0.2},
              {"activation": "PReLU", "perturb": true},
              {"activation": "LeakyReLU", "pooling_mode": "AvgPool1d", "dropout_prob_theta": 0.25,
               "hist_exog": 0, "futr_exog": 0, "stat_exog": 0},
              {"activation": "Softplus", "interpolation_mode": "nearest"}],
    "nbeats": [{"h": 5, "input_size": 9, "n_blocks": [1, 2, 1], "activation": "Tanh"},
               {"n_blocks": [1, 2, 1], "activation": "PReLU", "shared_weights": true,
                "perturb": true},
               {"activation": "SELU"}],
    "nbeatsx": [{"stack_types": ["exogenous", "identity", "trend", "seasonality", "exogenous"],
                 "n_blocks": [1, 1, 1, 1, 1], "activation": "Tanh", "dropout_prob_theta": 0.3},
                {"stack_types": ["exogenous", "identity"], "n_blocks": [1, 1],
                 "hist_exog": 0, "stat_exog": 0}],
    "tide": [{"layernorm": true, "num_encoder_layers": 2, "num_decoder_layers": 2, "dropout": 0.25,
              "perturb": true},
             {"layernorm": false, "num_encoder_layers": 2, "num_decoder_layers": 2,
              "dropout": 0.25, "perturb": true},
             {"layernorm": true, "num_encoder_layers": 2, "hist_exog": 0, "futr_exog": 0,
              "stat_exog": 0, "perturb": true},
             {"layernorm": false, "hist_exog": 0, "futr_exog": 0, "stat_exog": 0,
              "perturb": true}],
    "patchtst": [{"revin_affine": true, "perturb": true},
                 {"batch_normalization": true, "revin_affine": true, "revin_subtract_last": false,
                  "activation": "relu", "attn_dropout": 0.3, "head_dropout": 0.2,
                  "perturb": true},
                 {"res_attention": false, "learn_pos_embed": false, "encoder_layers": 3,
                  "revin": false, "patch_len": 16, "stride": 3},
                 {"encoder_layers": 0, "hidden_size": 4, "n_heads": 4, "batch": 1}],
    "itransformer": [{"use_norm": false, "futr_exog": 0, "e_layers": 1, "batch": 1},
                     {"n_heads": 4, "e_layers": 3, "dropout": 0.25, "perturb": true},
                     {"d_ff": 0, "e_layers": 0, "futr_exog": 2, "h": 5, "input_size": 4},
                     {"hidden_size": 7, "n_heads": 3, "futr_exog": 2, "dropout": 0.0,
                      "perturb": true}],
    "bitcn": [{"futr_exog": 0, "dropout": 0.0}, {"h": 1, "input_size": 16, "futr_exog": 2,
               "batch": 2},
              {"h": 9, "input_size": 2, "hist_exog": 0, "stat_exog": 0, "dropout": 0.2}],
    "rnn": [{"recurrent": true, "h_train": 2, "encoder_dropout": 0.2},
            {"recurrent": true, "inference_input_size": 4, "hist_exog": 0, "batch": 1}],
    "gru": [{"recurrent": true, "h_train": 3, "encoder_n_layers": 1},
            {"recurrent": true, "futr_exog": 0, "stat_exog": 0}],
    "lstm": [{"recurrent": true, "h_train": 2, "encoder_dropout": 0.2},
             {"recurrent": true, "h": 5, "input_size": 2, "encoder_n_layers": 3, "batch": 1}]
  })");
  static const nlohmann::json none = nlohmann::json::array();
  return all.contains(kind) ? all.at(std::string(kind)) : none;
}

// The model's small config with a variant's overrides.
template <class Model>
typename Model::Config variant_config(nlohmann::json v) {
  typename Model::Config c = small_config<Model>();
  WindowShape s = c;
  for (auto [key, field] : {std::pair{"h", &s.h},
                            {"input_size", &s.input_size},
                            {"outputs", &s.outputs},
                            {"hist_exog", &s.hist_exog},
                            {"futr_exog", &s.futr_exog},
                            {"stat_exog", &s.stat_exog}})
    if (v.contains(key)) *field = v[key].template get<Index>(), v.erase(key);
  c.set_shape(s);
  v.erase("batch");
  v.erase("perturb");
  OptionReader reader(v, std::string(Model::Config::kKind.name));
  c.visit(reader);
  reader.check_all_used();
  return c;
}

// The largest relative error of the model's parameter gradients against central differences,
// on `b` random windows, in training mode (dropout masks fixed by the seed and step, batch
// statistics included).
template <class Model>
testing::GradcheckResult gradient_error(Model& m, Index b, bool perturb) {
  // The training windows (a recurrent=True model's are its own: train::window_input_size).
  WindowShape shape = m.config();
  shape.input_size = train::window_input_size(m, true);
  shape.h = train::window_horizon(m, true);
  const Index rows = b * shape.h, cols = m.n_series() * m.config().outputs, out_size = rows * cols;
  const Windows data(shape, b, 5);
  const ForecastInputs<double> in = data.inputs(b);
  RngStream noise(7, 3);
  std::vector<testing::GradVar> vars;
  // Attention's key bias adds the same amount to every score of a query's row, which the
  // softmax cancels: its gradient is zero, so central differences hold only noise. It is
  // checked to be zero to rounding instead.
  std::vector<Param<double>*> zero_grads;
  m.for_each_param([&](const std::string& name, Param<double>& p) {
    if (perturb)
      for (double& v : p.value) v += 0.1 * double(noise.uniform(-1.f, 1.f));
    if (name.ends_with("key_projection.bias") || name.ends_with("W_K.bias"))
      zero_grads.push_back(&p);
    else
      vars.push_back({name, p.value.data, p.grad.data, p.value.numel(), true});
  });
  const Ctx ctx{.training = true, .seed = 9, .step = 2};
  std::vector<double> dy(static_cast<size_t>(out_size));
  double* out = m.forward(ctx, in).data;
  for (Param<double>* p : zero_grads) std::fill(p->grad.begin(), p->grad.end(), 0.0);
  testing::GradcheckResult res = testing::gradcheck(
      vars, {{out, dy.data(), out_size}}, [&] { m.forward(ctx, in); },
      [&] { m.backward(ctx, in, ConstMat<double>(dy.data(), rows, cols)); });
  for (Param<double>* p : zero_grads)
    for (const double g : p->grad)
      if (std::abs(g) > 1e-12) res = {1.0, "key_projection.bias: a nonzero gradient"};
  return res;
}

// The small defaults, then each variant; each with one output per value and with three (a
// multi-output loss's head: MQLoss's quantiles).
TYPED_TEST(RegistryModel, GradientsMatchCentralDifferences) {
  const auto res = gradient_error(this->model, this->kBatch, false);
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
  nlohmann::json variants = nlohmann::json::array({nlohmann::json::object()});
  for (const nlohmann::json& v : grad_variants(TypeParam::Config::kKind.name))
    variants.push_back(v);
  for (nlohmann::json v : variants)
    for (const Index outputs : {1, 3}) {
      if (v.empty() && outputs == 1) continue;  // the fixture's model, above
      v["outputs"] = outputs;
      SCOPED_TRACE(v.dump());
      TypeParam m(variant_config<TypeParam>(v));
      const Index b = v.value("batch", this->kBatch);
      Planner planner;
      m.plan(planner, b);
      Arena variant_arena(std::move(planner));
      RngStream rng(3, kInitStream);
      m.init(rng);
      const auto r = gradient_error(m, b, v.value("perturb", false));
      EXPECT_LE(r.max_rel_error, 1e-6) << r.worst;
    }
}

// outputs (M, a multi-output loss's) comes with the shape, and must be at least one.
TYPED_TEST(RegistryModel, TakesTheLossOutputsAndRejectsNone) {
  WindowShape s = small_shape<TypeParam>();
  s.outputs = 3;
  typename TypeParam::Config c = TypeParam::Config::shaped(s, small_config<TypeParam>());
  EXPECT_EQ(c.outputs, 3);
  c.outputs = 0;
  EXPECT_THROW(c.validate(), Error);
  EXPECT_THROW(TypeParam{c}, Error);
}

// Options each model with exogenous gradients runs its checks with (tests/support/exog_grads.h;
// each with M = 1 and 2, statics a row per window and shared): the paths its exogenous inputs
// take. A model without an entry runs its small defaults.
const nlohmann::json& exog_variants(std::string_view kind) {
  static const nlohmann::json all = nlohmann::json::parse(R"({
    "mlp": [{"num_layers": 2, "hidden_size": 7}, {"num_layers": 1, "hidden_size": 7}],
    "mlp_multivariate": [{"num_layers": 2, "hidden_size": 9}, {"num_layers": 3, "hidden_size": 9}],
    "nhits": [{"n_blocks": [1, 2, 1], "mlp_units": [6, 6, 6, 7], "n_pool_kernel_size": [2, 3, 1],
               "n_freq_downsample": [3, 2, 1], "dropout_prob_theta": 0.2},
              {"n_blocks": [1, 2, 1], "mlp_units": [6, 6, 6, 7], "n_pool_kernel_size": [2, 3, 1],
               "n_freq_downsample": [3, 2, 1], "pooling_mode": "AvgPool1d",
               "activation": "Tanh", "dropout_prob_theta": 0.2}],
    "nbeatsx": [{"stack_types": ["identity", "exogenous", "trend", "exogenous"],
                 "n_blocks": [1, 2, 1, 1], "mlp_units": [6, 6, 6, 7], "n_harmonics": 1,
                 "dropout_prob_theta": 0.2},
                {"stack_types": ["identity", "exogenous", "trend", "exogenous"],
                 "n_blocks": [1, 2, 1, 1], "mlp_units": [6, 6, 6, 7], "n_harmonics": 1,
                 "shared_weights": true, "activation": "Softplus", "dropout_prob_theta": 0.2}],
    "tide": [{"layernorm": true, "num_encoder_layers": 2, "temporal_decoder_dim": 5,
              "dropout": 0.2},
             {"layernorm": false, "num_encoder_layers": 2, "temporal_decoder_dim": 5,
              "dropout": 0.2}],
    "itransformer": [{"use_norm": true, "dropout": 0.0}, {"use_norm": false, "e_layers": 1}],
    "tsmixerx": [{"n_block": 2, "ff_dim": 4, "revin": true, "dropout": 0.0},
                 {"n_block": 2, "ff_dim": 4, "revin": false, "dropout": 0.25}]
  })");
  static const nlohmann::json defaults = nlohmann::json::array({nlohmann::json::object()});
  return all.contains(kind) ? all.at(std::string(kind)) : defaults;
}

// The gradients of the exogenous inputs a model returns (WindowShape::exog_grads): central
// differences, chunks against the whole batch, the switch changing nothing else; and only for
// the inputs it has.
TYPED_TEST(RegistryModel, ExogGradientsMatchCentralDifferences) {
  if constexpr (!requires(TypeParam & m) { m.exog_grads(); }) {
    GTEST_SKIP() << "no exogenous gradients: the registry refuses categorical features for it";
  } else {
    using testing::exog::Dims;
    constexpr ForecastKind kind = TypeParam::Config::kKind;
    Dims d = kind.multivariate ? Dims{.h = 3, .l = 5, .n = 3, .x = 2, .f = 1, .s = 2, .m = 1}
                               : Dims{.h = 4, .l = 7, .n = 1, .x = 2, .f = 2, .s = 3, .m = 1};
    // Only the exogenous kinds the model takes (iTransformer: future ones).
    if (!kind.hist_exog) d.x = 0;
    if (!kind.futr_exog) d.f = 0;
    if (!kind.stat_exog) d.s = 0;
    for (const nlohmann::json& v : exog_variants(kind.name)) {
      SCOPED_TRACE(v.dump());
      const auto options = [&](auto, Index) { return variant_config<TypeParam>(v); };
      testing::exog::check_model<TemplateOf<TypeParam>::template type>(options, d);
    }
    // Only the inputs a window has get a gradient: the others' pointers are null.
    for (const auto& [x, f, s] : {std::tuple<Index, Index, Index>{0, 2, 0}, {1, 0, 2}, {0, 0, 3}}) {
      if ((x > 0 && !kind.hist_exog) || (f > 0 && !kind.futr_exog) || (s > 0 && !kind.stat_exog))
        continue;
      Dims a = d;
      a.x = x, a.f = f, a.s = s, a.per_window = !kind.multivariate;
      testing::exog::check_exog_gradients<TemplateOf<TypeParam>::template type>(
          [&](auto) { return small_config<TypeParam>(); }, a, "absent inputs");
    }
  }
}

// Built without exog_grads a model returns no exogenous gradients (or refuses to be asked).
TYPED_TEST(RegistryModel, ExogGradientsOnlyWhenAskedFor) {
  if constexpr (requires(TypeParam & m) { m.exog_grads(); }) {
    try {
      const ExogGrads<double> g = this->model.exog_grads();
      EXPECT_TRUE(g.hist == nullptr && g.futr == nullptr && g.stat == nullptr);
    } catch (const Error&) {
    }
  }
}

// A univariate model refuses a panel of series, and every model the exogenous kinds it has no
// use for.
TYPED_TEST(RegistryModel, RejectsWhatItsKindCannotTake) {
  constexpr ForecastKind kind = TypeParam::Config::kKind;
  typename TypeParam::Config c;
  const WindowShape s = small_shape<TypeParam>();
  auto refused = [&](Index WindowShape::*field, bool takes) {
    WindowShape b = s;
    b.*field += 1;
    if (!takes) {
      EXPECT_THROW(c.set_shape(b), Error);
    }
  };
  refused(&WindowShape::n_series, kind.multivariate);
  refused(&WindowShape::hist_exog, kind.hist_exog);
  refused(&WindowShape::futr_exog, kind.futr_exog);
  refused(&WindowShape::stat_exog, kind.stat_exog);
}

TYPED_TEST(RegistryModel, ChunksOfWindowsGiveTheWholeBatch) {
  auto& m = this->model;
  if constexpr (!TypeParam::kWindowsIndependent) {
    GTEST_SKIP() << "its windows are coupled (batch statistics): it never runs in chunks";
  } else {
    const Index b = this->kBatch, h = m.horizon(), n = m.n_series();
    const auto& c = m.config();
    const Windows data(c, b, 6);
    const ForecastInputs<double> in = data.inputs(b);
    const Ctx ctx{.training = true, .seed = 4, .step = 1};
    std::vector<double> dy(size_t(this->out_size(b)));
    RngStream rng(8, 2);
    for (double& v : dy) v = rng.uniform(-1.f, 1.f);
    auto grads = [&] {
      std::vector<double> g;
      m.for_each_param([&](const std::string&, Param<double>& p) {
        g.insert(g.end(), p.grad.begin(), p.grad.end());
        std::fill(p.grad.begin(), p.grad.end(), 0.0);
      });
      return g;
    };
    grads();
    const ConstMat<double> whole_out = m.forward(ctx, in);
    const std::vector<double> whole(whole_out.data, whole_out.data + this->out_size(b));
    m.backward(ctx, in, ConstMat<double>(dy.data(), b * h, whole_out.cols));
    const std::vector<double> whole_grads = grads();
    // Chunks of 3 and 1 windows, in order, as the trainer runs them.
    std::vector<double> chunked;
    for (Index b0 = 0; b0 < b; b0 += 3) {
      const Index k = std::min<Index>(3, b - b0);
      const ForecastInputs<double> sub =
          in.windows(b0, k, c.input_size, h, n, c.hist_exog, c.futr_exog);
      const ConstMat<double> out = m.forward(ctx, sub);
      chunked.insert(chunked.end(), out.data, out.data + this->out_size(k));
      m.backward(ctx, sub, ConstMat<double>(dy.data() + b0 * h * out.cols, k * h, out.cols));
    }
    ASSERT_EQ(chunked.size(), whole.size());
    for (size_t i = 0; i < whole.size(); ++i)
      EXPECT_NEAR(chunked[i], whole[i], 1e-12 * std::max(1.0, std::abs(whole[i]))) << i;
    const std::vector<double> chunked_grads = grads();
    ASSERT_EQ(chunked_grads.size(), whole_grads.size());
    for (size_t i = 0; i < whole_grads.size(); ++i)
      EXPECT_NEAR(chunked_grads[i], whole_grads[i], 1e-12 * std::max(1.0, std::abs(whole_grads[i])))
          << i;
  }
}

TYPED_TEST(RegistryModel, GoldenInitForwardAndGradientsMatchNeuralforecast) {
  const std::string kind(TypeParam::Config::kKind.name);
  if (!golden::has_forecast_golden(kind + "_grad"))
    GTEST_SKIP() << "no forecast_golden.py gradient golden for " << kind
                 << " (the stacked models' and TiDE's are blocks_golden.py's)";
  golden::check_gradients<TypeParam>(kind, kind + "_grad");
}

TYPED_TEST(RegistryModel, GoldenBlocksInitForwardAndGradientsMatchNeuralforecast) {
  const std::string kind(TypeParam::Config::kKind.name);
  if (!golden::has_blocks_golden(kind)) GTEST_SKIP() << "no blocks_golden.py golden for " << kind;
  const nlohmann::json& g = golden::blocks_golden(kind);
  const auto config_of = golden::config_of_kwargs<typename TypeParam::Config>;
  golden::expect_init<TemplateOf<TypeParam>::template type>(g, config_of);
  golden::expect_forward_and_grads<TemplateOf<TypeParam>::template type>(g, config_of);
}

TYPED_TEST(RegistryModel, GoldenMultiOutputHeadMatchesNeuralforecastMQLoss) {
  const std::string kind(TypeParam::Config::kKind.name);
  if (!std::filesystem::exists(golden::golden_dir() / (kind + "_mq3_grad.json")))
    GTEST_SKIP() << "no multi_output_golden.py golden for " << kind;
  golden::check_gradients<TypeParam>(kind, kind + "_mq3_grad");
}

TYPED_TEST(RegistryModel, GoldenFirst20TrainingLossesMatchNeuralforecast) {
  const std::string kind(TypeParam::Config::kKind.name);
  if (!golden::has_forecast_golden(kind + "_train"))
    GTEST_SKIP() << "no training golden for " << kind;
  golden::check_training<typename Rebind<TypeParam, float>::type>(kind);
}

}  // namespace registry_models_test
}  // namespace shoal
