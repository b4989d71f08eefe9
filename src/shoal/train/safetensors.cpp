#include "shoal/train/safetensors.h"
#include "shoal/core/file_io.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace shoal::train {
namespace {

constexpr uint64_t kMaxHeader = 100u << 20;  // the Rust reader's limit is 100 MB

[[noreturn]] void bad(const std::string& source, const std::string& msg,
                      const std::string& field = {}, const std::string& expected = {},
                      const std::string& actual = {}) {
  throw Error(msg,
              ErrorContext{.file = source, .field = field, .expected = expected, .actual = actual});
}

size_t element_bytes(const TensorRef& t) {
  return t.i64 ? 8 : 4;
}

}  // namespace

const LoadedTensor* SafetensorsFile::find(std::string_view name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::string encode_safetensors(std::span<const TensorRef> tensors,
                               const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    SHOAL_CHECK(!t.name.empty() && t.name != "__metadata__", "bad tensor name '{}'", t.name);
    SHOAL_CHECK(!header.contains(t.name), "duplicate tensor name '{}'", t.name);
    SHOAL_CHECK(
        (t.data != nullptr) + (t.i32 != nullptr) + (t.i64 != nullptr) == 1 || t.shape.numel() == 0,
        "tensor '{}' must have exactly one of data, i32, i64", t.name);
    std::vector<int64_t> shape(t.shape.dims.begin(), t.shape.dims.begin() + t.shape.rank);
    const uint64_t bytes = static_cast<uint64_t>(t.shape.numel()) * element_bytes(t);
    header[t.name] = {{"dtype", t.i32   ? "I32"
                                : t.i64 ? "I64"
                                        : "F32"},
                      {"shape", shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i)
    out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  out += json;
  out.reserve(out.size() + offset);
  for (const auto& t : tensors) {
    // Little-endian values (x86, ARM): the bytes are written as they are in memory.
    const void* p = t.i32   ? static_cast<const void*>(t.i32)
                    : t.i64 ? static_cast<const void*>(t.i64)
                            : static_cast<const void*>(t.data);
    const size_t bytes = static_cast<size_t>(t.shape.numel()) * element_bytes(t);
    if (bytes > 0) out.append(static_cast<const char*>(p), bytes);
  }
  return out;
}

void write_safetensors(const std::string& path, std::span<const TensorRef> tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_file_atomic(path, encode_safetensors(tensors, metadata));
}

SafetensorsIndex index_safetensors(std::string_view bytes, const std::string& source) {
  if (bytes.size() < 8)
    bad(source, "truncated safetensors file", "", "at least 8 bytes",
        std::to_string(bytes.size()) + " bytes");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[static_cast<size_t>(i)]))
         << (8 * i);
  if (n > kMaxHeader || n > bytes.size() - 8)
    bad(source, "header length exceeds the file", "header", fmt::format("<= {}", bytes.size() - 8),
        std::to_string(n));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.substr(8, n));
  } catch (const nlohmann::json::exception& e) {
    bad(source, "header is not valid JSON", "header", "a JSON object", e.what());
  }
  if (!header.is_object()) bad(source, "header is not a JSON object", "header");
  const uint64_t data_size = bytes.size() - 8 - n;
  SafetensorsIndex index;
  index.data_start = 8 + n;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) bad(source, "__metadata__ is not an object", name);
      for (const auto& [k, mv] : v.items()) {
        if (!mv.is_string()) bad(source, "metadata values must be strings", k);
        index.metadata[k] = mv.get<std::string>();
      }
      continue;
    }
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") ||
        !v.contains("data_offsets"))
      bad(source, "tensor entry lacks dtype, shape or data_offsets", name);
    const auto& dt = v["dtype"];
    const auto& sh = v["shape"];
    const auto& off = v["data_offsets"];
    if (!dt.is_string() || !sh.is_array() || !off.is_array() || off.size() != 2 ||
        !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      bad(source, "malformed tensor entry", name, "dtype string, shape list, 2 offsets", v.dump());
    SafetensorsEntry t;
    t.name = name;
    t.dtype = dt.get<std::string>();
    uint64_t esize = 0;
    if (t.dtype == "F32" || t.dtype == "I32")
      esize = 4;
    else if (t.dtype == "F64" || t.dtype == "I64")
      esize = 8;
    else
      bad(source, "unsupported dtype", name, "F32, F64, I32 or I64", t.dtype);
    uint64_t numel = 1;
    for (const auto& d : sh) {
      if (!d.is_number_unsigned()) bad(source, "shape entries must be non-negative", name);
      const uint64_t dim = d.get<uint64_t>();
      if (dim > (uint64_t{1} << 40) || (dim != 0 && numel > (uint64_t{1} << 40) / dim))
        bad(source, "tensor too large", name);
      numel *= dim;
      t.shape.push_back(dim);
    }
    t.begin = off[0].get<uint64_t>();
    t.end = off[1].get<uint64_t>();
    if (t.begin > t.end || t.end > data_size)
      bad(source, "data offsets out of range (truncated file?)", name,
          fmt::format("0 <= begin <= end <= {}", data_size),
          fmt::format("[{}, {}]", t.begin, t.end));
    if (t.end - t.begin != numel * esize)
      bad(source, "data size does not match shape and dtype", name,
          fmt::format("{} bytes", numel * esize), fmt::format("{} bytes", t.end - t.begin));
    index.entries.push_back(std::move(t));
  }
  // Overlapping tensors mean a lying header.
  std::stable_sort(
      index.entries.begin(), index.entries.end(),
      [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < index.entries.size(); ++i) {
    const SafetensorsEntry& prev = index.entries[i - 1];
    const SafetensorsEntry& t = index.entries[i];
    if (t.begin < prev.end && t.end > t.begin) bad(source, "tensors overlap", t.name);
  }
  return index;
}

SafetensorsFile decode_safetensors(std::string_view bytes, const std::string& source) {
  const SafetensorsIndex index = index_safetensors(bytes, source);
  const char* data = bytes.data() + index.data_start;
  SafetensorsFile f;
  f.metadata = index.metadata;
  for (const SafetensorsEntry& e : index.entries) {
    if (e.shape.size() > static_cast<size_t>(Shape::kMaxRank))
      bad(source, "tensor rank too high", e.name, fmt::format("<= {}", Shape::kMaxRank),
          std::to_string(e.shape.size()));
    LoadedTensor t;
    t.name = e.name;
    for (uint64_t d : e.shape) t.shape.dims[static_cast<size_t>(t.shape.rank++)] = Index(d);
    const auto numel = static_cast<size_t>(t.shape.numel());
    const char* p = data + e.begin;
    t.integer = e.dtype == "I32" || e.dtype == "I64";
    if (e.dtype == "I32") {
      t.ints.resize(numel);
      for (size_t i = 0; i < numel; ++i) {
        int32_t x = 0;
        std::memcpy(&x, p + i * 4, 4);
        t.ints[i] = x;
      }
    } else if (e.dtype == "I64") {
      t.ints.resize(numel);
      if (numel > 0) std::memcpy(t.ints.data(), p, numel * 8);
    } else if (t.data.resize(numel); e.dtype == "F32") {
      // An empty tensor has no buffer, and memcpy with a null pointer is undefined even for 0
      // bytes (UBSan, fuzz/safetensors_fuzz).
      if (numel > 0) std::memcpy(t.data.data(), p, numel * 4);
    } else {
      for (size_t i = 0; i < numel; ++i) {
        double x = 0;
        std::memcpy(&x, p + i * 8, 8);
        t.data[i] = static_cast<float>(x);
      }
    }
    f.tensors.push_back(std::move(t));
  }
  return f;
}

SafetensorsFile read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) bad(path, "cannot open file", "", "a readable safetensors file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return decode_safetensors(ss.str(), path);
}

}  // namespace shoal::train
