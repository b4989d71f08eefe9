// The checks every registered forecasting model goes through, one typed suite over them all:
// its list equals the registry's neural models, gradients match central differences in double,
// a batch run in chunks of windows gives the whole batch's forecasts and gradients, and where
// bench/peers/forecast_golden.py wrote its goldens, its initial weights, forward, gradients and
// first 20 training losses match neuralforecast's (tests/support/forecast_golden.h). A model
// added to the registry joins ModelTypes below (the first test fails until it does) and needs
// nothing else here but its golden files. The fits through the registry run every registered model
// too (its names from tests/support/registry_models.h): predict from saved weights (tests/train/
// forecast_weights_test.cpp) and 1 against 2 threads (tests/train/global_fit_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "shoal/core/rng.h"
#include "shoal/models/dilated_rnn.h"
#include "shoal/models/dlinear.h"
#include "shoal/models/gru.h"
#include "shoal/models/lstm.h"
#include "shoal/models/mlp_multivariate.h"
#include "shoal/models/nbeats.h"
#include "shoal/models/nbeatsx.h"
#include "shoal/models/nhits.h"
#include "shoal/models/nlinear.h"
#include "shoal/models/rnn.h"
#include "shoal/models/tcn.h"
#include "shoal/models/tide.h"
#include "shoal/models/tsmixer.h"
#include "shoal/models/tsmixerx.h"
#include "shoal/train/forecast_registry.h"
#include "support/forecast_golden.h"
#include "support/gradcheck.h"

namespace shoal {
namespace registry_models_test {

using namespace models;

template <class... M>
struct TypeList {
  using Gtest = ::testing::Types<M...>;
  static std::vector<std::pair<std::string_view, bool>> kinds() {
    return {{M::Config::kKind.name, M::Config::kKind.multivariate}...};
  }
};
using ModelTypes = TypeList<NLinear<double>, DLinear<double>, MlpForecast<double>,
                            MlpMultivariate<double>, NHITS<double>, NBEATS<double>, NBEATSx<double>,
                            TiDE<double>, TSMixer<double>, TSMixerx<double>, RNN<double>,
                            GRU<double>, LSTM<double>, TCN<double>, DilatedRNN<double>>;

TEST(RegistryModels, TheSuiteCoversEveryRegisteredModel) {
  std::set<std::pair<std::string, bool>> registered, listed;
  for (const train::ForecastModel& m : train::forecast_models())
    if (m.neural) registered.insert({std::string(m.name), m.multivariate});
  for (const auto& [name, multivariate] : ModelTypes::kinds())
    listed.insert({std::string(name), multivariate});
  EXPECT_EQ(listed, registered) << "ModelTypes must list every neural model of the registry, "
                                   "with the registry's kind";
}

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

// Random windows in shoal's layouts (models/forecast.h).
struct Windows {
  std::vector<double> y, hist, futr, stat;
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
  }
  ForecastInputs<double> inputs(Index b) const {
    return {.batch = b,
            .insample_y = y.data(),
            .hist_exog = hist.empty() ? nullptr : hist.data(),
            .futr_exog = futr.empty() ? nullptr : futr.data(),
            .stat_exog = stat.empty() ? nullptr : stat.data()};
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

TYPED_TEST(RegistryModel, GradientsMatchCentralDifferences) {
  auto& m = this->model;
  const Index b = this->kBatch, rows = b * m.horizon();
  const Windows data(m.config(), b, 5);
  const ForecastInputs<double> in = data.inputs(b);
  std::vector<testing::GradVar> vars;
  m.for_each_param([&](const std::string& name, Param<double>& p) {
    vars.push_back({name, p.value.data, p.grad.data, p.value.numel(), true});
  });
  // Training mode: dropout masks (fixed by the seed and step) and batch statistics included.
  const Ctx ctx{.training = true, .seed = 9, .step = 2};
  std::vector<double> dy(size_t(this->out_size(b)));
  double* out = m.forward(ctx, in).data;
  const auto res = testing::gradcheck(
      vars, {{out, dy.data(), this->out_size(b)}}, [&] { m.forward(ctx, in); },
      [&] { m.backward(ctx, in, ConstMat<double>(dy.data(), rows, m.n_series())); });
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
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
                 << " (the stacked models' are blocks_golden.py's, TSMixer(x)'s "
                    "tsmixer_golden.py's: their own tests)";
  golden::check_gradients<TypeParam>(kind);
}

TYPED_TEST(RegistryModel, GoldenFirst20TrainingLossesMatchNeuralforecast) {
  const std::string kind(TypeParam::Config::kKind.name);
  if (!golden::has_forecast_golden(kind + "_train"))
    GTEST_SKIP() << "no forecast_golden.py training golden for " << kind
                 << " (TSMixer(x)'s are tsmixer_golden.py's: tsmixer_golden_test.cpp)";
  golden::check_training<typename Rebind<TypeParam, float>::type>(kind);
}

}  // namespace registry_models_test
}  // namespace shoal
