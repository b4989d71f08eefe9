#include "shoal/core/model_folder.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "shoal/core/error.h"
#include "shoal/core/sha256.h"

namespace shoal {
namespace {

namespace fs = std::filesystem;
constexpr const char* kManifest = "model.json";

}  // namespace

void model_folder_damaged(const std::string& dir, const std::string& why) {
  throw Error(fmt::format("cannot load the model at {}: {}", dir, why),
              ErrorContext{.expected = "a folder written by a shoal save"});
}

void write_model_folder(const std::string& dir, std::string_view format, int version,
                        const nlohmann::ordered_json& fields, const FolderFiles& files,
                        std::string_view what) {
  SHOAL_CHECK(fields.is_object(), "a model folder's fields must be a JSON object");
  nlohmann::ordered_json manifest = {{"format", format}, {"version", version}};
  for (const auto& [k, v] : fields.items()) {
    SHOAL_CHECK(k != "format" && k != "version" && k != "files",
                "'{}' is model.json's own field, not a model's", k);
    manifest[k] = v;
  }
  manifest["files"] = nlohmann::ordered_json::object();
  for (const auto& [name, bytes] : files) {
    SHOAL_CHECK(name != kManifest, "model.json is written from the fields, not given as a file");
    manifest["files"][name] = {{"bytes", bytes.size()}, {"sha256", sha256_hex(bytes)}};
  }
  FolderFiles out = files;
  out.emplace_back(kManifest, manifest.dump(1));
  write_save_folder(dir, format, out, what);
}

ModelFolder read_model_folder(const std::string& dir, std::string_view format,
                              std::span<const int> versions) {
  const fs::path path = dir;
  if (!fs::is_regular_file(path / kManifest))
    model_folder_damaged(dir, "it is not a saved shoal model (no model.json)");
  ModelFolder f;
  std::string at = kManifest;  // the file being read, for a parse error's message
  try {
    f.manifest = nlohmann::json::parse(read_input_file((path / kManifest).string()));
    if (!f.manifest.is_object() || f.manifest.value("format", "") != format)
      model_folder_damaged(dir, fmt::format("model.json is not a {} model", format));
    const nlohmann::json& version = f.manifest.value("version", nlohmann::json());
    const bool known =
        version.is_number_integer() &&
        std::find(versions.begin(), versions.end(), version.get<int64_t>()) != versions.end();
    if (!known)
      model_folder_damaged(dir, fmt::format("it is {} version {}; this shoal reads version {}",
                                            format, version.dump(), fmt::join(versions, " or ")));
    const nlohmann::json& listed = f.manifest.at("files");
    SHOAL_CHECK(listed.is_object(), "'files' must be an object");
    for (const auto& [name, want] : listed.items()) {
      at = name;
      SHOAL_CHECK(!name.empty() && name.find('/') == std::string::npos && name != kManifest &&
                      name != "." && name != "..",
                  "'{}' is not a file name of the folder", name);
      if (!fs::exists(path / name)) model_folder_damaged(dir, fmt::format("{} is missing", name));
      std::string bytes = read_input_file((path / name).string());
      if (bytes.size() != want.at("bytes").get<size_t>() ||
          sha256_hex(bytes) != want.at("sha256").get<std::string>())
        model_folder_damaged(
            dir,
            fmt::format("{} is damaged: its size or checksum differs from model.json's", name));
      f.files.emplace(name, std::move(bytes));
    }
  } catch (const nlohmann::json::exception& e) {
    model_folder_damaged(dir, fmt::format("model.json ({}): {}", at, e.what()));
  } catch (const Error& e) {
    if (std::string_view(e.what()).starts_with("cannot load the model at")) throw;
    model_folder_damaged(dir, e.what());
  }
  return f;
}

const std::string& model_file(const ModelFolder& folder, const std::string& dir,
                              const std::string& name) {
  const auto it = folder.files.find(name);
  if (it == folder.files.end())
    model_folder_damaged(dir, fmt::format("model.json does not list {}", name));
  return it->second;
}

}  // namespace shoal
