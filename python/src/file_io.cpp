// The one I/O layer (core/file_io.h) and the one implementation of shoal's file formats (saved
// model folders, core/model_folder.h; safetensors, train/safetensors.h) for the pure-Python
// package: NCF.save, NeuralForecast.save, save_weights and the rest go through these, so
// Python's files get the CLI's guards and are the CLI's files byte for byte.
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "shoal/core/file_io.h"
#include "shoal/core/model_folder.h"
#include "shoal/train/safetensors.h"

namespace nb = nanobind;

namespace shoal::py {
namespace {

using AnyArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

// A tensor to encode: float32, int32 or int64 values, C-contiguous (the caller converts).
train::TensorRef tensor_ref(const std::string& name, const AnyArray& a) {
  train::TensorRef t{.name = name};
  SHOAL_CHECK(a.ndim() <= static_cast<size_t>(Shape::kMaxRank), "tensor '{}': rank {} (at most {})",
              name, a.ndim(), Shape::kMaxRank);
  for (size_t d = 0; d < a.ndim(); ++d) t.shape.dims[d] = static_cast<Index>(a.shape(d));
  t.shape.rank = static_cast<int>(a.ndim());
  if (a.dtype() == nb::dtype<float>())
    t.data = static_cast<const float*>(a.data());
  else if (a.dtype() == nb::dtype<int32_t>())
    t.i32 = static_cast<const int32_t*>(a.data());
  else if (a.dtype() == nb::dtype<int64_t>())
    t.i64 = static_cast<const int64_t*>(a.data());
  else
    throw Error(fmt::format("tensor '{}': only float32, int32 and int64 arrays are written", name));
  return t;
}

}  // namespace

void bind_file_io(nb::module_& m) {
  m.def(
      "write_file",
      [](const std::string& path, nb::bytes data, const std::vector<std::string>& inputs,
         const std::string& what) {
        std::string bytes(data.c_str(), data.size());
        nb::gil_scoped_release release;
        OutputPlan(inputs).file(path, what);
        write_file_atomic(path, bytes);
      },
      nb::arg("path"), nb::arg("data"), nb::arg("inputs"), nb::arg("what"),
      "Writes `data` to `path` atomically, refusing an output that is, or is inside, an input.");
  m.def(
      "check_save_folder",
      [](const std::string& path, const std::string& format, const std::vector<std::string>& inputs,
         const std::string& what) { check_save_folder(path, format, inputs, what); },
      nb::arg("path"), nb::arg("format"), nb::arg("inputs"), nb::arg("what"));
  m.def(
      "write_save_folder",
      [](const std::string& path, const std::string& format,
         const std::vector<std::pair<std::string, nb::bytes>>& files, const std::string& what) {
        FolderFiles copy;
        for (const auto& [name, b] : files)
          copy.emplace_back(name, std::string(b.c_str(), b.size()));
        nb::gil_scoped_release release;
        write_save_folder(path, format, copy, what);
      },
      nb::arg("path"), nb::arg("format"), nb::arg("files"), nb::arg("what"),
      "Writes a save folder whole and swaps it in; replaces only an earlier save of `format`.");
  m.def(
      "write_model_folder",
      [](const std::string& path, const std::string& format, int version,
         const std::string& fields_json,
         const std::vector<std::pair<std::string, nb::bytes>>& files, const std::string& what) {
        const auto fields = nlohmann::ordered_json::parse(fields_json);
        FolderFiles copy;
        for (const auto& [name, b] : files)
          copy.emplace_back(name, std::string(b.c_str(), b.size()));
        nb::gil_scoped_release release;
        write_model_folder(path, format, version, fields, copy, what);
      },
      nb::arg("path"), nb::arg("format"), nb::arg("version"), nb::arg("fields_json"),
      nb::arg("files"), nb::arg("what"),
      "Writes a saved model's folder: the files and model.json (format, version, the fields, "
      "each file's size and sha256), swapped in whole.");
  m.def(
      "read_model_folder",
      [](const std::string& path, const std::string& format, const std::vector<int>& versions) {
        ModelFolder f;
        {
          nb::gil_scoped_release release;
          f = read_model_folder(path, format, versions);
        }
        std::vector<std::pair<std::string, nb::bytes>> files;
        for (const auto& [name, b] : f.files)
          files.emplace_back(name, nb::bytes(b.data(), b.size()));
        return std::make_pair(f.manifest.dump(), std::move(files));
      },
      nb::arg("path"), nb::arg("format"), nb::arg("versions"),
      "(model.json as text, [(name, bytes)]) of the save at `path`, every listed file checked "
      "against model.json's size and sha256.");
  m.def(
      "safetensors_encode",
      [](const std::vector<std::pair<std::string, AnyArray>>& tensors,
         const std::map<std::string, std::string>& metadata) {
        std::vector<train::TensorRef> refs;
        for (const auto& [name, a] : tensors) refs.push_back(tensor_ref(name, a));
        const std::string out = train::encode_safetensors(refs, metadata);
        return nb::bytes(out.data(), out.size());
      },
      nb::arg("tensors"), nb::arg("metadata"),
      "safetensors bytes of [(name, array)] (float32 as F32, int32 as I32, int64 as I64), in "
      "the given order.");
  m.def(
      "safetensors_index",
      [](nb::bytes blob) {
        const train::SafetensorsIndex index =
            train::index_safetensors(std::string_view(blob.c_str(), blob.size()), "safetensors");
        std::vector<std::tuple<std::string, std::string, std::vector<uint64_t>, uint64_t, uint64_t>>
            entries;
        for (const auto& e : index.entries)
          entries.emplace_back(e.name, e.dtype, e.shape, e.begin, e.end);
        return std::make_tuple(index.data_start, std::move(entries), index.metadata);
      },
      nb::arg("blob"),
      "(data_start, [(name, dtype, shape, begin, end)] in data order, metadata) of a checked "
      "safetensors header.");
  m.def(
      "check_output_folder",
      [](const std::string& path, const std::string& what) { OutputPlan({}).folder(path, what); },
      nb::arg("path"), nb::arg("what"));
}

}  // namespace shoal::py
