// Small text helpers shared by the readers.
#pragma once

#include <string_view>

namespace shoal::data {

// Without leading/trailing spaces and tabs (and a trailing '\r' from CRLF files).
inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// Without one pair of surrounding double quotes, if present.
inline std::string_view unquote(std::string_view s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

}  // namespace shoal::data
