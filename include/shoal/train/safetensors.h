// safetensors files (https://huggingface.co/docs/safetensors): 8-byte little-endian header
// length N, N bytes of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// "__metadata__": {string: string}}, then the tensor bytes (offsets relative to their start).
// shoal writes F32 tensors (and I32 / I64 ones: a saved model's id lists and offsets),
// contiguous, in the order given, with the header padded by spaces to a multiple of 8 bytes;
// safetensors (Rust/Python), numpy and PyTorch read it. The reader accepts F32 and F64
// (converted to float), I32 and I64 (into `ints`), and rejects lying or truncated headers, offsets
// out of range or overlapping, and sizes that disagree with the shape, with a shoal::Error.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/core/tensor.h"

namespace shoal::train {

// One of data / i32 / i64 is set: shape.numel() contiguous values.
struct TensorRef {
  std::string name;
  Shape shape;
  const float* data = nullptr;
  const int32_t* i32 = nullptr;  // written as I32
  const int64_t* i64 = nullptr;  // written as I64
};

struct LoadedTensor {
  std::string name;
  Shape shape;
  std::vector<float> data;    // F32 and F64 tensors
  std::vector<int64_t> ints;  // I32 and I64 tensors
  bool integer = false;       // which of the two holds the values
};

struct SafetensorsFile {
  std::vector<LoadedTensor> tensors;  // in data-offset order
  std::map<std::string, std::string> metadata;
  const LoadedTensor* find(std::string_view name) const;
};

// One tensor of a safetensors header, checked: dtype F32, F64, I32 or I64, a shape whose size
// agrees with the byte range [begin, end) of the data (which starts data_start bytes into the
// file), and no overlap with another tensor.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
  uint64_t begin = 0, end = 0;
};

struct SafetensorsIndex {
  uint64_t data_start = 0;
  std::vector<SafetensorsEntry> entries;  // in data-offset order
  std::map<std::string, std::string> metadata;
};

// The checked header of safetensors `bytes` (the tensors are not copied; `source` names them in
// errors). decode_safetensors reads the tensors through it; Python views them in place.
SafetensorsIndex index_safetensors(std::string_view bytes, const std::string& source);

// Written atomically (core/file_io.h), so a crash never leaves a half-written file.
void write_safetensors(const std::string& path, std::span<const TensorRef> tensors,
                       const std::map<std::string, std::string>& metadata = {});
std::string encode_safetensors(std::span<const TensorRef> tensors,
                               const std::map<std::string, std::string>& metadata = {});
SafetensorsFile read_safetensors(const std::string& path);
SafetensorsFile decode_safetensors(std::string_view bytes, const std::string& source);

}  // namespace shoal::train
