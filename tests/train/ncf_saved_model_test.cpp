#include "shoal/train/ncf_saved_model.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "shoal/train/checkpoint.h"

namespace shoal::train {
namespace {

namespace fs = std::filesystem;

NcfSavedModel sample() {
  NcfSavedModel m;
  m.options.kind = "neumf";
  m.options.layers = {8, 4};
  m.context_cols = {"hour"};
  m.users = data::IdMap::of_strings({"ann", "bob"});
  m.items = data::IdMap::of_integers({3, 70, 900});
  m.seen_offsets = {0, 2, 3};
  m.seen_items = {0, 2, 1};
  m.user_context = {0.25f, -1.5f};
  NcfEvaluator ev(m.model_config(), 1);
  RngStream rng(5, 1);
  ev.model().init(rng);
  m.weights = encode_checkpoint(ev.arena());
  m.losses = {0.7, 0.5};
  return m;
}

TEST(NcfSavedModel, RoundTripAndOverwrite) {
  const std::string dir = ::testing::TempDir() + "ncf_saved";
  fs::remove_all(dir);
  const NcfSavedModel m = sample();
  save_ncf_model(dir, m);
  save_ncf_model(dir, m);  // over an existing save: no leftovers beside it
  for (const auto& e : fs::directory_iterator(fs::path(dir).parent_path()))
    EXPECT_TRUE(e.path().filename().string().find(".ncf_saved") == std::string::npos &&
                e.path().filename().string().find("ncf_saved.tmp") == std::string::npos)
        << e.path();
  const NcfSavedModel r = load_ncf_model(dir);
  EXPECT_EQ(r.options.kind, "neumf");
  EXPECT_EQ(r.options.layers, m.options.layers);
  EXPECT_EQ(r.users.string_ids(), m.users.string_ids());
  EXPECT_EQ(r.items.integer_ids(), m.items.integer_ids());
  EXPECT_EQ(r.seen_offsets, m.seen_offsets);
  EXPECT_EQ(r.seen_items, m.seen_items);
  EXPECT_EQ(r.user_context, m.user_context);
  EXPECT_EQ(r.weights, m.weights);
  EXPECT_EQ(r.losses, m.losses);
}

// Any damage gives one error naming the model and the file.
TEST(NcfSavedModel, DamageIsNamed) {
  const std::string dir = ::testing::TempDir() + "ncf_damaged";
  auto expect_error = [&](const std::string& what) {
    try {
      load_ncf_model(dir);
      ADD_FAILURE() << "no error for " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cannot load the model at " + dir), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  fs::remove_all(dir);
  expect_error("no model.json");
  save_ncf_model(dir, sample());
  {
    std::fstream f(dir + "/weights.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  expect_error("weights.safetensors is damaged");
  save_ncf_model(dir, sample());
  fs::remove(dir + "/users.json");
  expect_error("users.json");
  save_ncf_model(dir, sample());
  std::ofstream(dir + "/model.json") << "{\"format\": \"shoal.ncf\", \"version\": 9}";
  expect_error("version 9");
}

}  // namespace
}  // namespace shoal::train
