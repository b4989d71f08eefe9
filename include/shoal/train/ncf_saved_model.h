// A whole NCF recommender in one directory: what it needs to recommend in a fresh process
// (settings, id maps, weights, each user's training items and context row). The layout is
// docs/ncf.md's "Saved model layout", and the one Python's NCF.save / NCF.load use, so a model
// saved by `shoal ncf train --save DIR` loads in Python and the other way round:
//
//   model.json          {"format": "shoal.ncf", "version": 1, "settings": {...NCF(...) args},
//                        "num_users", "num_items", "losses", "files": {name: {bytes, sha256}}}
//   weights.safetensors the model's parameters (train/checkpoint.h names)
//   state.safetensors   seen_offsets I64 [U+1], seen_items I32 (training items per user row),
//                       user_context F32 [U, C] (contextual models)
//   users.json, items.json  {"ids": [...]}: row r's id (integers or strings)
//
// save writes the directory through core/file_io.h's write_save_folder: whole under a temporary
// sibling name, then swapped into place, so a reader sees the old model or the new one; it
// replaces only an earlier shoal.ncf save (or an empty folder), never other files. load checks
// every file's size and sha256 against model.json: any damage gives one shoal::Error naming the
// directory and the file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/data/ids.h"
#include "shoal/train/ncf_trainer.h"

namespace shoal::train {

// model.json's "format" of a saved NCF model: what a save folder may replace.
inline constexpr const char* kNcfFormat = "shoal.ncf";

struct NcfSavedModel {
  NcfOptions options;  // kind, factors, layers (and the training settings, for the record)
  uint64_t seed = 1;
  std::vector<std::string> context_cols;  // [C]
  data::IdMap users, items;               // row ↔ id
  std::vector<int64_t> seen_offsets;      // [U + 1]
  std::vector<int32_t> seen_items;        // item rows, by user row
  std::vector<float> user_context;        // [U, C]
  std::string weights;                    // safetensors bytes (encode_checkpoint)
  std::vector<double> losses;             // per epoch
  // The Python NCF's own arguments, kept for its load (the CLI saves their defaults).
  int threads = 0;
  std::string user_col = "user", item_col = "item", on_unknown = "raise";

  Index num_users() const { return users.size(); }
  Index num_items() const { return items.size(); }
  // The model's shape for these tables and context columns.
  models::Ncf<float>::Config model_config() const;
};

// Each user row's training items (CSR over user rows, items in input order).
void seen_items_of(const data::NcfPositives& train, std::vector<int64_t>& offsets,
                   std::vector<int32_t>& items);

// model.json's "settings": the arguments of Python's NCF(...) that made the model.
nlohmann::ordered_json ncf_settings(const NcfSavedModel& model);

// `what` names the flag or argument in errors ("--save").
void save_ncf_model(const std::string& dir, const NcfSavedModel& model,
                    std::string_view what = "save");
NcfSavedModel load_ncf_model(const std::string& dir);

}  // namespace shoal::train
