#include "shoal/core/model_folder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "shoal/core/error.h"
#include "shoal/core/sha256.h"

namespace shoal {
namespace model_folder_test {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("shoal_model_folder_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

void write(const fs::path& dir) {
  const nlohmann::ordered_json fields = {{"settings", {{"h", 12}}}, {"num_series", 3}};
  write_model_folder(dir.string(), "shoal.test", 2, fields,
                     {{"weights.bin", std::string("abc\0def", 7)}, {"ids.json", "[1,2,3]"}},
                     "path");
}

std::string load_error(const fs::path& dir, std::initializer_list<int> versions = {2}) {
  try {
    read_model_folder(dir.string(), "shoal.test", std::span<const int>(versions));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelFolder, RoundTripsFieldsAndFilesWithTheirChecksums) {
  const fs::path dir = scratch("round_trip");
  write(dir);
  const int versions[] = {1, 2};
  const ModelFolder f = read_model_folder(dir.string(), "shoal.test", versions);
  EXPECT_EQ(f.manifest.at("format"), "shoal.test");
  EXPECT_EQ(f.manifest.at("version"), 2);
  EXPECT_EQ(f.manifest.at("settings").at("h"), 12);
  EXPECT_EQ(f.manifest.at("num_series"), 3);
  EXPECT_EQ(f.manifest.at("files").at("weights.bin").at("sha256"),
            sha256_hex(std::string("abc\0def", 7)));
  EXPECT_EQ(model_file(f, dir.string(), "weights.bin"), std::string("abc\0def", 7));
  EXPECT_EQ(model_file(f, dir.string(), "ids.json"), "[1,2,3]");
  EXPECT_THROW(model_file(f, dir.string(), "other.bin"), Error);
  fs::remove_all(dir.parent_path());
}

TEST(ModelFolder, NamesWhatIsWrongWithADamagedSave) {
  const fs::path dir = scratch("damaged");
  write(dir);
  EXPECT_NE(load_error(dir, {1}).find("it is shoal.test version 2; this shoal reads version 1"),
            std::string::npos);
  { std::ofstream(dir / "weights.bin", std::ios::binary) << "abc?def"; }
  EXPECT_NE(load_error(dir).find("weights.bin is damaged"), std::string::npos) << load_error(dir);
  fs::remove(dir / "weights.bin");
  EXPECT_NE(load_error(dir).find("weights.bin is missing"), std::string::npos) << load_error(dir);
  { std::ofstream(dir / "model.json") << "{\"format\": \"shoal.other\"}"; }
  EXPECT_NE(load_error(dir).find("model.json is not a shoal.test model"), std::string::npos);
  { std::ofstream(dir / "model.json") << "{\"format\": \"shoal.test\", \"version\": 2}"; }
  EXPECT_NE(load_error(dir).find("cannot load the model at"), std::string::npos);
  fs::remove(dir / "model.json");
  EXPECT_NE(load_error(dir).find("not a saved shoal model"), std::string::npos);
  fs::remove_all(dir.parent_path());
}

TEST(ModelFolder, RefusesFieldsThatAreTheManifestsOwn) {
  const fs::path dir = scratch("own_fields");
  EXPECT_THROW(write_model_folder(dir.string(), "shoal.test", 1, {{"files", 1}}, {}, "path"),
               Error);
  EXPECT_THROW(write_model_folder(dir.string(), "shoal.test", 1, nlohmann::ordered_json::object(),
                                  {{"model.json", "{}"}}, "path"),
               Error);
  EXPECT_FALSE(fs::exists(dir));
  fs::remove_all(dir.parent_path());
}

}  // namespace model_folder_test
}  // namespace shoal
