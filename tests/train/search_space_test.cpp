// The default search spaces: neuralforecast's ranges, and every draw a job the model accepts.
#include <gtest/gtest.h>

#include <random>
#include <tuple>

#include "shoal/models/forecast_models.h"
#include "shoal/train/forecast_job.h"
#include "shoal/train/forecast_registry.h"
#include "shoal/train/search_space.h"

namespace shoal::search_space_test {

TEST(SearchSpace, NhitsIsNeuralforecastsSpace) {
  const train::SearchSpace s = train::default_search_space("nhits", 12);
  ASSERT_GE(s.size(), 9u);
  EXPECT_EQ(s[0].key, "input_size");
  EXPECT_EQ(s[0].choices, nlohmann::json({12, 24, 36, 48, 60}));
  EXPECT_EQ(s[1].choices, nlohmann::json({1, 12}));  // step_size 1 or h
  for (const train::SearchDimension& d : s) {
    if (d.key == "max_steps") {
      EXPECT_EQ(d.kind, train::SpaceKind::kQUniform);
      EXPECT_EQ(d.lower, 500);
      EXPECT_EQ(d.upper, 1500);
      EXPECT_EQ(d.q, 100);
    }
    if (d.key == "learning_rate") {
      EXPECT_EQ(d.kind, train::SpaceKind::kLogUniform);
      EXPECT_EQ(d.lower, 1e-4);
      EXPECT_EQ(d.upper, 1e-1);
    }
  }
  EXPECT_TRUE(train::default_search_space("naive", 12).empty());
}

TEST(SearchSpace, EveryDrawIsAJobTheModelAccepts) {
  std::mt19937_64 rng(7);
  int models = 0;
  for (const train::ForecastModel& m : train::forecast_models()) {
    const train::SearchSpace space = train::default_search_space(m.name, 6);
    if (!m.neural) {
      EXPECT_TRUE(space.empty()) << m.name;
      continue;
    }
    ASSERT_FALSE(space.empty()) << m.name << " has no default search space";
    ++models;
    for (int k = 0; k < 30; ++k) {
      nlohmann::json options = train::draw(space, rng);
      options["h"] = 6;
      for (const train::SearchDimension& d : space) {
        const nlohmann::json& v = options[d.key];
        if (d.kind == train::SpaceKind::kRandInt) {
          EXPECT_GE(v.get<double>(), d.lower);
          EXPECT_LT(v.get<double>(), d.upper);
        } else if (d.kind != train::SpaceKind::kChoice) {
          EXPECT_GE(v.get<double>(), d.lower) << d.key;
          EXPECT_LE(v.get<double>(), d.upper) << d.key;
        }
      }
      EXPECT_NO_THROW(train::forecast_job(m.name, options)) << m.name << " " << options.dump();
    }
  }
  // Every windowed model of the one list (models/forecast_models.h) has its space checked.
  EXPECT_EQ(models, int(std::tuple_size_v<models::ForecastModels<std::tuple, float>>));
}

}  // namespace shoal::search_space_test
