// What every fuzz target shares. A reader's contract for bad input is a shoal::Error with
// context; so that is the one outcome a target swallows. Anything else (a crash, a sanitizer
// report, any other exception escaping, a hang, an allocation past -rss_limit_mb) is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "shoal/core/error.h"
#include "shoal/data/gzip.h"

namespace shoal::fuzz {

inline std::string bytes_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// The text a path-taking reader would see for a file with these bytes: read_text_file
// inflates gzip (detected by its magic) and returns anything else as is.
inline std::string file_text(const std::string& bytes, const std::string& source) {
  return data::is_gzip(bytes) ? data::gunzip(bytes, source) : bytes;
}

// Runs `read`; a shoal::Error is the expected answer to bad input and is dropped.
template <class Read>
void expect_ok_or_error(Read&& read) {
  try {
    read();
  } catch (const shoal::Error&) {
  }
}

}  // namespace shoal::fuzz
