// Small text helpers shared by the readers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

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

// Splits a CSV line into trimmed fields (views into `line`; `out` is reused), honouring double
// quotes: a comma inside "..." belongs to the field, which keeps its quotes (unquote strips
// them; a doubled "" inside stays doubled). Lines without a quote take the plain fast path.
void split_csv(std::string_view line, std::vector<std::string_view>& out);

// The position of the first byte of `s` that is not part of valid UTF-8 (overlong forms,
// surrogates and code points past U+10FFFF are invalid), or npos.
size_t invalid_utf8_at(std::string_view s);

// The text a reader parses: `text` without a leading UTF-8 byte-order mark, after checking that
// it is UTF-8. Throws shoal::Error naming `source`, the line, the field (column) and the byte.
std::string_view checked_text(const std::string& text, const std::string& source);

}  // namespace shoal::data
