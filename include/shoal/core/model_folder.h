// A saved model's folder: its files beside a manifest, model.json, that names the folder's
// format and version, carries the model's own fields (settings, counts, ...) and lists every
// other file with its size and SHA-256. The one implementation of the layout, for the CLI
// (NCF's --save) and the Python package (NCF.save, NeuralForecast.save).
//
// Written whole into a temporary folder and swapped in (write_save_folder, core/file_io.h), so
// a reader sees the old save or the new one. Read back with every file checked against the
// manifest: any damage throws one shoal::Error, "cannot load the model at DIR: ..." naming the
// file and what is wrong with it.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/core/file_io.h"

namespace shoal {

// Writes `files` (name, bytes; not model.json) and model.json = {"format", "version", the
// fields of `fields` in their order, "files": {name: {"bytes", "sha256"}}} into `dir`.
// check_save_folder's rules apply to `dir` (`what` names the flag or argument).
void write_model_folder(const std::string& dir, std::string_view format, int version,
                        const nlohmann::ordered_json& fields, const FolderFiles& files,
                        std::string_view what);

struct ModelFolder {
  nlohmann::json manifest;                   // model.json
  std::map<std::string, std::string> files;  // every file model.json lists, checked
};

// Reads the save at `dir`: model.json must name `format` and one of `versions`, and every file
// it lists must be there with the listed size and SHA-256.
ModelFolder read_model_folder(const std::string& dir, std::string_view format,
                              std::span<const int> versions);

// The bytes of file `name` of `folder`, or the load error naming it when model.json lists no
// such file.
const std::string& model_file(const ModelFolder& folder, const std::string& dir,
                              const std::string& name);

// Throws the load error for `dir`: "cannot load the model at DIR: <why>".
[[noreturn]] void model_folder_damaged(const std::string& dir, const std::string& why);

}  // namespace shoal
