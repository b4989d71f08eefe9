// Reading the golden files of bench/peers/*_golden.py: <name>.json (an index of arrays, the
// config and scalars) and <name>.bin (little-endian float64 or float32 arrays, as the index
// says); and the error measure the parity tests bound.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "shoal/core/error.h"
#include "shoal/core/tensor.h"

namespace shoal::golden {

inline std::filesystem::path golden_dir() {
  return SHOAL_GOLDEN_DIR;
}

// <name>.json index + <name>.bin arrays.
class Golden {
 public:
  explicit Golden(const std::string& name) {
    const auto base = golden_dir() / name;
    std::ifstream js(base.string() + ".json");
    if (!js) throw Error("cannot open golden " + base.string() + ".json");
    meta_ = nlohmann::json::parse(js);
    std::ifstream bin(base.string() + ".bin", std::ios::binary);
    if (!bin) throw Error("cannot open golden " + base.string() + ".bin");
    blob_.assign(std::istreambuf_iterator<char>(bin), {});
    f64_ = meta_.at("dtype") == "float64";
  }
  const nlohmann::json& meta() const { return meta_; }
  bool has(const std::string& name) const { return meta_.at("arrays").contains(name); }
  std::vector<double> get(const std::string& name) const {
    const auto& e = meta_.at("arrays").at(name);
    Index n = 1;
    for (auto d : e.at("shape")) n *= d.get<Index>();
    const auto off = e.at("offset").get<size_t>();
    std::vector<double> out(static_cast<size_t>(n));
    for (size_t i = 0; i < out.size(); ++i) {
      if (f64_) {
        double v;
        std::memcpy(&v, blob_.data() + off + 8 * i, 8);
        out[i] = v;
      } else {
        float v;
        std::memcpy(&v, blob_.data() + off + 4 * i, 4);
        out[i] = v;
      }
    }
    return out;
  }
  std::vector<std::string> names_with_prefix(const std::string& prefix) const {
    std::vector<std::string> r;
    for (auto it = meta_.at("arrays").begin(); it != meta_.at("arrays").end(); ++it)
      if (it.key().rfind(prefix, 0) == 0) r.push_back(it.key().substr(prefix.size()));
    return r;
  }

 private:
  nlohmann::json meta_;
  std::vector<char> blob_;
  bool f64_ = true;
};

// max |a − b| / max(max |b|, 1e-12): error relative to the reference's scale.
template <class T>
double rel_error(const T* a, const std::vector<double>& b) {
  double num = 0, den = 1e-12;
  for (size_t i = 0; i < b.size(); ++i) {
    num = std::max(num, std::abs(static_cast<double>(a[i]) - b[i]));
    den = std::max(den, std::abs(b[i]));
  }
  return num / den;
}

template <class T>
void fill(TensorView<T> v, const std::vector<double>& src, const std::string& name) {
  ASSERT_EQ(static_cast<size_t>(v.numel()), src.size()) << name;
  for (size_t i = 0; i < src.size(); ++i) v.data[i] = static_cast<T>(src[i]);
}

}  // namespace shoal::golden
