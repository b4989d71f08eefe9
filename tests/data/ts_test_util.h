// Helpers for the time-series tests: files in a per-test temporary directory, gzip writing,
// and the message of the shoal::Error a call throws.
#pragma once

#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "shoal/core/error.h"

namespace shoal::testing {

inline std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "shoal_ts_tests";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

inline std::string write_text(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

inline std::string write_gzip(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  return path;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// $SHOAL_DATA/ts/<name>, or "" when the shared data is absent.
inline std::string ts_data(const std::string& name) {
  const char* root = std::getenv("SHOAL_DATA");
  if (root == nullptr) return "";
  const std::string p = std::string(root) + "/ts/" + name;
  return std::filesystem::exists(p) ? p : "";
}

}  // namespace shoal::testing
