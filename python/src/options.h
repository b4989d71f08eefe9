// Python values into the one key–value form of core/options.h.
#pragma once

#include <string>

#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nlohmann/json.hpp>

#include "shoal/core/error.h"

namespace shoal::py {

// A Python value as JSON: the one key–value form of train/forecast_job.h (None, bool, int, float,
// str, and lists of those).
inline nlohmann::json to_json(nanobind::handle v) {
  if (v.is_none()) return nullptr;
  if (nanobind::isinstance<nanobind::bool_>(v)) return nanobind::cast<bool>(v);
  if (nanobind::isinstance<nanobind::int_>(v)) {
    // As text, read exactly by the option's type: Python ints are unbounded, C++ ones are not,
    // and an out-of-range value is an error, never wrapped.
    return nanobind::cast<std::string>(nanobind::str(v));
  }
  if (nanobind::isinstance<nanobind::float_>(v)) return nanobind::cast<double>(v);
  if (nanobind::isinstance<nanobind::str>(v)) return nanobind::cast<std::string>(v);
  if (nanobind::isinstance<nanobind::list>(v) || nanobind::isinstance<nanobind::tuple>(v)) {
    nlohmann::json out = nlohmann::json::array();
    for (nanobind::handle e : v) out.push_back(to_json(e));
    return out;
  }
  throw Error(
      fmt::format("unsupported setting value {}", nanobind::cast<std::string>(nanobind::repr(v))));
}

// A dict of settings as a JSON object (keys as given).
inline nlohmann::json to_json_object(const nanobind::dict& d) {
  nlohmann::json out = nlohmann::json::object();
  for (auto [key, value] : d) out[nanobind::cast<std::string>(key)] = to_json(value);
  return out;
}

}  // namespace shoal::py
