// shoal._core: the extension module. shoal::Error (bad input, bad configs) becomes ValueError
// with the same text; the pure-Python package (python/shoal/) wraps these functions.
#include <nanobind/nanobind.h>

#include "shoal/core/error.h"

namespace nb = nanobind;

namespace shoal::py {
void bind_file_io(nb::module_& m);
void bind_forecast(nb::module_& m);
void bind_ncf(nb::module_& m);
}  // namespace shoal::py

NB_MODULE(_core, m) {
  m.doc() = "shoal's C++ core (fits, the fleet, NCF); use the `shoal` package";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const shoal::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  shoal::py::bind_file_io(m);
  shoal::py::bind_forecast(m);
  shoal::py::bind_ncf(m);
}
