#include "shoal/data/text.h"

#include <algorithm>
#include <cstdint>

#include "shoal/core/error.h"

namespace shoal::data {

size_t csv_record_end(std::string_view text) {
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '"')
      quoted = !quoted;  // a doubled "" toggles twice: still quoted
    else if (text[i] == '\n' && !quoted)
      return i;
  }
  return std::string_view::npos;
}

void split_csv(std::string_view line, std::vector<std::string_view>& out,
               std::deque<std::string>& decoded) {
  out.clear();
  if (line.find('"') == std::string_view::npos) {  // the common case: no quotes, no copies
    size_t start = 0;
    for (;;) {
      const size_t comma = line.find(',', start);
      if (comma == std::string_view::npos) {
        out.push_back(trim(line.substr(start)));
        return;
      }
      out.push_back(trim(line.substr(start, comma - start)));
      start = comma + 1;
    }
  }
  size_t i = 0;
  for (;;) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    if (i < line.size() && line[i] == '"') {
      // Quoted: up to the quote not doubled; a view when nothing inside is doubled.
      size_t j = i + 1;
      bool doubled = false;
      while (j < line.size() && !(line[j] == '"' && (j + 1 >= line.size() || line[j + 1] != '"')))
        j += (line[j] == '"') ? (doubled = true, 2) : 1;
      std::string_view value = line.substr(i + 1, std::min(j, line.size()) - i - 1);
      i = std::min(j + 1, line.size());
      // Bytes between the closing quote and the comma (not RFC 4180) are kept, not dropped.
      const size_t comma = std::min(line.find(',', i), line.size());
      const std::string_view tail = trim(line.substr(i, comma - i));
      if (doubled || !tail.empty()) {
        std::string v;
        for (size_t k = 0; k < value.size(); ++k) {
          v.push_back(value[k]);
          if (value[k] == '"') ++k;
        }
        v.append(tail);
        value = decoded.emplace_back(std::move(v));
      }
      out.push_back(value);
      i = comma;
    } else {
      const size_t comma = std::min(line.find(',', start), line.size());
      out.push_back(trim(line.substr(start, comma - start)));
      i = comma;
    }
    if (i >= line.size()) return;
    ++i;  // the comma
  }
}

void split_csv(std::string_view line, std::vector<std::string_view>& out) {
  thread_local std::deque<std::string> decoded;
  decoded.clear();
  split_csv(line, out, decoded);
}

void append_csv_field(std::string& out, std::string_view field) {
  const bool plain = field.find_first_of(",\"\n\r") == std::string_view::npos &&
                     (field.empty() || (field.front() != ' ' && field.front() != '\t' &&
                                        field.back() != ' ' && field.back() != '\t'));
  if (plain) {
    out.append(field);
    return;
  }
  out.push_back('"');
  for (const char c : field) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
}

void append_csv_row(std::string& out, const std::vector<std::string_view>& fields) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out.push_back(',');
    append_csv_field(out, fields[i]);
  }
  out.push_back('\n');
}

size_t invalid_utf8_at(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t w = 0;
      std::copy_n(p + i, 8, reinterpret_cast<unsigned char*>(&w));
      if ((w & 0x8080808080808080ULL) != 0) break;
      i += 8;
    }
    if (i >= n) break;
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0, min = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return i;
    }
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string_view checked_text(const std::string& text, const std::string& source) {
  std::string_view body(text);
  if (body.size() >= 3 && body.compare(0, 3, "\xEF\xBB\xBF") == 0) body.remove_prefix(3);
  const size_t bad = invalid_utf8_at(body);
  if (bad == std::string_view::npos) return body;
  const size_t line_start =
      body.rfind('\n', bad) == std::string_view::npos ? 0 : body.rfind('\n', bad) + 1;
  const auto line = static_cast<int64_t>(std::count(body.begin(), body.begin() + bad, '\n')) + 1;
  // The field: separators (comma, tab) before the byte on its line.
  const std::string_view before = body.substr(line_start, bad - line_start);
  const auto column = static_cast<int64_t>(std::count(before.begin(), before.end(), ',') +
                                           std::count(before.begin(), before.end(), '\t')) +
                      1;
  throw Error("text is not UTF-8",
              ErrorContext{.file = source,
                           .line = line,
                           .column = column,
                           .expected = "UTF-8 text (save the file as UTF-8)",
                           .actual = fmt::format("byte 0x{:02X} at byte {} of the line",
                                                 static_cast<unsigned char>(body[bad]),
                                                 bad - line_start + 1)});
}

}  // namespace shoal::data
