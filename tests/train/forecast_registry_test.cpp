// The forecasting registry: every model's options (shared and its own) round-trip through the one
// key–value form, a value reaches the model, and errors name the model and the key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "shoal/core/error.h"
#include "shoal/models/tsmixer.h"
#include "shoal/models/tsmixerx.h"
#include "shoal/train/forecast_job.h"
#include "shoal/train/forecast_registry.h"

namespace shoal::forecast_registry_test {

using train::forecast_job;

TEST(ForecastRegistry, EveryOptionOfEveryModelRoundTrips) {
  ASSERT_GE(train::forecast_models().size(), 4u);
  for (const train::ForecastModel& m : train::forecast_models()) {
    // A baseline reads only the horizon and the season length.
    const nlohmann::json base =
        m.neural ? nlohmann::json{{"h", 3}, {"input_size", 6}} : nlohmann::json{{"h", 3}};
    const train::ForecastJob job = forecast_job(m.name, base);
    const nlohmann::json settings = train::forecast_settings(job);
    nlohmann::json again = settings;
    again.erase("model");
    // What the settings say, the parser reads back to the same settings.
    EXPECT_EQ(train::forecast_settings(forecast_job(m.name, again)), settings) << m.name;
    // Every listed option is one the parser knows.
    for (const OptionInfo& o : train::forecast_options(m.name))
      EXPECT_TRUE(settings.contains(o.key)) << m.name << " " << o.key;
  }
}

TEST(ForecastRegistry, ModelOptionsReachTheModelsConfig) {
  const train::ForecastJob job =
      forecast_job("tsmixerx", {{"h", 3}, {"input_size", 6}, {"n_block", "3"}, {"ff_dim", 16}});
  const auto& c = std::any_cast<const models::TSMixerx<float>::Config&>(job.options);
  EXPECT_EQ(c.n_block, 3);
  EXPECT_EQ(c.ff_dim, 16);
  EXPECT_EQ(c.dropout, 0.0);
  // One default per model, written in its Config.
  const train::ForecastJob mixer = forecast_job("tsmixer", {{"h", 3}, {"input_size", 6}});
  EXPECT_EQ(std::any_cast<const models::TSMixer<float>::Config&>(mixer.options).dropout, 0.9);
}

TEST(ForecastRegistry, ErrorsNameTheModelAndTheKey) {
  try {
    forecast_job("naive", {{"h", 3}, {"n_block", 2}});
    FAIL() << "a mixer option was accepted for naive";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown config key 'n_block' for model 'naive'"),
              std::string::npos)
        << e.what();
  }
  try {
    forecast_job("informer", {{"h", 3}});
    FAIL() << "an unknown model was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown model 'informer'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find(train::forecast_model_names()), std::string::npos);
  }
  EXPECT_THROW(forecast_job("tsmixerx", {{"h", 3}, {"input_size", 6}, {"ff_dim", 0}}), Error);
  EXPECT_THROW(forecast_job("tsmixerx", {{"h", 3}, {"input_size", 6}, {"loss", "l1"}}), Error);
}

// docs/architecture.md's "Registered models" lists the registry: every name with its class.
TEST(ForecastRegistry, ArchitectureDocListsEveryModel) {
  const auto path =
      std::filesystem::path(SHOAL_GOLDEN_DIR).parent_path().parent_path() / "docs/architecture.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const size_t from = doc.find("## Registered models");
  ASSERT_NE(from, std::string::npos) << "no section \"Registered models\" in " << path;
  const std::string section = doc.substr(from, doc.find("\n## ", from + 1) - from);
  std::set<std::pair<std::string, std::string>> listed, registered;
  const std::regex row(R"(\n\| `([a-z_]+)` \| ([A-Za-z]+) \|)");
  for (auto it = std::sregex_iterator(section.begin(), section.end(), row);
       it != std::sregex_iterator(); ++it)
    listed.insert({(*it)[1], (*it)[2]});
  for (const train::ForecastModel& m : train::forecast_models())
    registered.insert({std::string(m.name), std::string(m.class_name)});
  EXPECT_EQ(listed, registered) << path;
}

}  // namespace shoal::forecast_registry_test
