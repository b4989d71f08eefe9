// Checkpoints of a model's arena as safetensors: every parameter and every `state` entry
// (BatchNorm running statistics), under its arena name (e.g. "mlp.0.weight"), shapes as
// planned. Optimizer state is not saved (weights only).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "shoal/core/arena.h"

namespace shoal::train {

void save_checkpoint(const Arena& arena, const std::string& path,
                     const std::map<std::string, std::string>& metadata = {});
// Loads every param/state entry of `arena` from `path` by name. Missing tensors, shape
// mismatches and (when strict) tensors the arena does not have raise shoal::Error.
// Returns the file's metadata.
std::map<std::string, std::string> load_checkpoint(const Arena& arena, const std::string& path,
                                                   bool strict = true);

// The same in memory: the safetensors bytes save_checkpoint would write, and a load from such
// bytes (`source` names them in errors).
std::string encode_checkpoint(const Arena& arena,
                              const std::map<std::string, std::string>& metadata = {});
std::map<std::string, std::string> load_checkpoint_bytes(const Arena& arena, std::string_view bytes,
                                                         const std::string& source,
                                                         bool strict = true);

}  // namespace shoal::train
