// Categorical exogenous features through the job path: options, checks, the window scaler
// leaving codes alone, the embedding tables in the trained weights, and data-parallel fits.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "shoal/data/windows.h"
#include "shoal/train/forecast_job.h"
#include "shoal/train/forecast_registry.h"
#include "shoal/train/safetensors.h"

namespace shoal::train {
namespace categorical_exog_test {

// Three series whose level follows a 3-category historical code ("c", 1..3) and a 2-category
// static one ("g"); "x" is a continuous historical feature.
struct Data {
  data::SeriesSet set;
  data::StaticTable statics;
};
Data make(int length = 80) {
  std::string text = "unique_id,ds,y,x,c\n";
  for (int s = 0; s < 3; ++s)
    for (int t = 1; t <= length; ++t) {
      const int code = 1 + (t / 2) % 3;
      text +=
          fmt::format("s{},{},{},{},{}\n", s, t, 5.0 * code + s + 0.1 * std::sin(t), 0.3 * t, code);
    }
  return {data::parse_series(text, "t.csv"),
          data::parse_static("unique_id,g\ns0,1\ns1,2\ns2,1\n", "s.csv")};
}

nlohmann::json options(const nlohmann::json& extra = nlohmann::json::object()) {
  nlohmann::json o = {{"h", 4},
                      {"input_size", 8},
                      {"max_steps", 40},
                      {"hist_exog_list", {"x", "c"}},
                      {"stat_exog_list", {"g"}},
                      {"cat_exog_list", {"g", "c"}},
                      {"categorical_cardinalities", {2, 3}},
                      {"scaler_type", "robust"}};
  o.update(extra);
  return o;
}

data::ExogSpec spec_of(const ForecastJob& job) {
  return job.exog;
}

TEST(CategoricalExog, TheWindowScalerLeavesCodesAlone) {
  const Data d = make();
  const ForecastJob job = forecast_job("mlp", options());
  const data::Panel p(d.set, {0, 1, 2}, spec_of(job), &d.statics);
  ASSERT_EQ(p.hist_categorical(), (std::vector<uint8_t>{0, 1}));
  ASSERT_EQ(p.stat_categorical(), (std::vector<uint8_t>{1}));
  data::WindowAssembler a(p, job.windows, 4);
  const std::vector<Index> starts = {0, 10, 20};
  const data::WindowBatch& b = a.assemble(starts, p.length());
  const Index l = b.L, n = b.N;
  for (Index w = 0; w < b.B; ++w)
    for (Index t = 0; t < l; ++t)
      for (Index s = 0; s < n; ++s) {
        const float code = b.hist_exog.data[((w * 2 + 1) * l + t) * n + s];
        EXPECT_EQ(code, float(1 + ((starts[size_t(w)] + t + 1) / 2) % 3)) << w << " " << t;
      }
  // The continuous channel is scaled (robust: its window median is 0).
  float lo = 1e9f, hi = -1e9f;
  for (Index t = 0; t < l; ++t) {
    lo = std::min(lo, b.hist_exog.data[t * n]);
    hi = std::max(hi, b.hist_exog.data[t * n]);
  }
  EXPECT_LT(lo, 0.0f);
  EXPECT_GT(hi, 0.0f);
}

TEST(CategoricalExog, CodesOutsideTheCardinalityNameTheColumn) {
  const Data d = make();
  ForecastJob job = forecast_job("mlp", options());
  job.exog.cardinalities = {2, 2};  // c holds 3
  try {
    const data::Panel p(d.set, {0, 1, 2}, job.exog, &d.statics);
    FAIL() << "accepted a code above the cardinality";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("column 'c' holds 3"), std::string::npos) << e.what();
  }
}

TEST(CategoricalExog, ChecksAreNeuralforecasts) {
  EXPECT_THROW(
      {
        try {
          forecast_job("nlinear", options({{"hist_exog_list", nlohmann::json::array()},
                                           {"stat_exog_list", nlohmann::json::array()}}));
        } catch (const Error& e) {
          EXPECT_STREQ(e.what(), "NLinear does not support categorical exogenous variables");
          throw;
        }
      },
      Error);
  EXPECT_THROW(forecast_job("mlp", options({{"categorical_cardinalities", {2}}})), Error);
  EXPECT_THROW(forecast_job("mlp", options({{"cat_exog_list", {"g", "z"}}})), Error);
  EXPECT_THROW(forecast_job("mlp", options({{"cat_emb_dim", "wide"}})), Error);
  EXPECT_THROW(forecast_job("mlp", options({{"categorical_cardinalities", {2, 0}}})), Error);
  // Cardinalities with no column, read by nothing, are refused too.
  try {
    forecast_job("mlp", {{"h", 2}, {"input_size", 4}, {"categorical_cardinalities", {3}}});
    ADD_FAILURE() << "cardinalities without cat_exog_list were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("read only with cat_exog_list"), std::string::npos)
        << e.what();
  }
}

// A univariate model trained globally: the tables are in the weights under neuralforecast's
// names and shapes, and the data-parallel fit (replicas reducing the tables' gradients) is the
// same with any thread count.
TEST(CategoricalExog, GlobalFitTrainsTheTablesWithAnyThreadCount) {
  const Data d = make();
  ForecastJob job = forecast_job("mlp", options({{"cat_emb_dim", "half"}, {"hidden_size", 32}}));
  job.keep_weights = true;
  const data::Panel p(d.set, {0, 1, 2}, job.exog, &d.statics);
  job.train.threads = 1;
  const FitResult one = fit_forecast(p, job);
  job.train.threads = 2;
  const FitResult two = fit_forecast(p, job);
  ASSERT_EQ(one.forecasts.size(), 12u);
  for (size_t i = 0; i < one.forecasts.size(); ++i) {
    EXPECT_TRUE(std::isfinite(one.forecasts[i]));
    EXPECT_NEAR(one.forecasts[i], two.forecasts[i], 1e-4 * (1 + std::abs(one.forecasts[i])));
  }
  const SafetensorsFile w = decode_safetensors(one.weights, "weights");
  const LoadedTensor* hist = w.find("hist_cat_embeddings.0.weight");
  const LoadedTensor* stat = w.find("stat_cat_embeddings.0.weight");
  ASSERT_NE(hist, nullptr);
  ASSERT_NE(stat, nullptr);
  EXPECT_EQ(hist->shape.str(), Shape({4, 2}).str());  // U + 1 rows, half: (3 + 1) / 2
  EXPECT_EQ(stat->shape.str(), Shape({3, 1}).str());  // (2 + 1) / 2
}

// Multivariate models embed the shared static rows once per series; predictions from the
// trained weights are the fit's forecasts.
TEST(CategoricalExog, MultivariateFitPredictsFromItsWeights) {
  const Data d = make();
  ForecastJob job = forecast_job("tsmixerx", options());
  job.keep_weights = true;
  const data::Panel p(d.set, {0, 1, 2}, job.exog, &d.statics);
  const FitResult r = fit_forecast(p, job);
  const Index start = data::predict_window_start(p, job.windows);
  const std::vector<double> again = predict_windows(p, job, r.weights, {&start, 1}, p.length(),
                                                    /*future=*/true);
  ASSERT_EQ(again.size(), r.forecasts.size());
  for (size_t i = 0; i < again.size(); ++i) EXPECT_DOUBLE_EQ(again[i], r.forecasts[i]) << i;
}

}  // namespace categorical_exog_test
}  // namespace shoal::train
