#include "shoal/train/checkpoint.h"

#include <algorithm>
#include <set>
#include <vector>

#include "shoal/train/safetensors.h"

namespace shoal::train {
namespace {

bool saved(const ArenaEntry& e) {
  return e.region == Region::kParams || e.region == Region::kState;
}

std::vector<TensorRef> checkpoint_refs(const Arena& arena) {
  std::vector<TensorRef> refs;
  for (const auto& e : arena.entries()) {
    if (!saved(e)) continue;
    SHOAL_CHECK(e.elem_size == sizeof(float), "checkpoints hold float tensors; '{}' is not",
                e.name);
    refs.push_back({e.name, e.shape, arena.find<float>(e.name).data});
  }
  return refs;
}

std::map<std::string, std::string> load_tensors(const Arena& arena, const SafetensorsFile& f,
                                                const std::string& path, bool strict) {
  std::set<std::string> used;
  for (const auto& e : arena.entries()) {
    if (!saved(e)) continue;
    const LoadedTensor* t = f.find(e.name);
    if (t == nullptr)
      throw Error("tensor missing from checkpoint",
                  ErrorContext{.file = path, .field = e.name, .expected = e.shape.str()});
    if (!(t->shape == e.shape))
      throw Error(
          "tensor shape differs from the model's",
          ErrorContext{
              .file = path, .field = e.name, .expected = e.shape.str(), .actual = t->shape.str()});
    if (t->integer)
      throw Error("tensor holds integers, the model's a float tensor",
                  ErrorContext{.file = path, .field = e.name, .expected = "F32 or F64"});
    const TensorView<float> dst = arena.find<float>(e.name);
    std::copy(t->data.begin(), t->data.end(), dst.data);
    used.insert(e.name);
  }
  if (strict)
    for (const auto& t : f.tensors)
      if (!used.count(t.name))
        throw Error("checkpoint tensor unknown to the model",
                    ErrorContext{.file = path, .field = t.name});
  return f.metadata;
}

}  // namespace

void save_checkpoint(const Arena& arena, const std::string& path,
                     const std::map<std::string, std::string>& metadata) {
  write_safetensors(path, checkpoint_refs(arena), metadata);
}

std::string encode_checkpoint(const Arena& arena,
                              const std::map<std::string, std::string>& metadata) {
  return encode_safetensors(checkpoint_refs(arena), metadata);
}

std::map<std::string, std::string> load_checkpoint(const Arena& arena, const std::string& path,
                                                   bool strict) {
  return load_tensors(arena, read_safetensors(path), path, strict);
}

std::map<std::string, std::string> load_checkpoint_bytes(const Arena& arena, std::string_view bytes,
                                                         const std::string& source, bool strict) {
  return load_tensors(arena, decode_safetensors(bytes, source), source, strict);
}

}  // namespace shoal::train
