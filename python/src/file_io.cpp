// The one I/O layer (core/file_io.h) for the pure-Python package: NCF.save, NeuralForecast.save,
// save_weights and the rest write through these, so Python's files get the CLI's guards.
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "shoal/core/file_io.h"

namespace nb = nanobind;

namespace shoal::py {

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
      "check_output_folder",
      [](const std::string& path, const std::string& what) { OutputPlan({}).folder(path, what); },
      nb::arg("path"), nb::arg("what"));
}

}  // namespace shoal::py
