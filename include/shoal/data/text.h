// Small text helpers shared by the readers.
#pragma once

#include <cstddef>
#include <deque>
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

// One CSV dialect for every file shoal reads or writes, RFC 4180 both ways: fields are
// separated by commas; a field holding a comma, a double quote, a line break or spaces at either
// end is written inside double quotes with each quote doubled, and a reader strips the quotes and
// un-doubles them. Unquoted fields are read trimmed of spaces and tabs (a hand-written
// "a, b" reads as "a" and "b"); quoted ones keep every byte.

// The end of the record that starts `text`: its first '\n' outside double quotes (npos: the
// record runs to the end), so a quoted field may hold line breaks.
size_t csv_record_end(std::string_view text);

// Splits a record into its field values (quotes removed, "" read as "). Values are views into
// `line`, or, for a field with a doubled quote inside, into `decoded`, whose strings never move:
// keep it as long as the views.
void split_csv(std::string_view line, std::vector<std::string_view>& out,
               std::deque<std::string>& decoded);
// The same, with `decoded` per thread and cleared on each call: the views last until the next.
void split_csv(std::string_view line, std::vector<std::string_view>& out);

// `field` appended to `out` as one CSV field: as it is, or quoted when it must be.
void append_csv_field(std::string& out, std::string_view field);
// `fields` as one CSV record, with its '\n'.
void append_csv_row(std::string& out, const std::vector<std::string_view>& fields);

// The position of the first byte of `s` that is not part of valid UTF-8 (overlong forms,
// surrogates and code points past U+10FFFF are invalid), or npos.
size_t invalid_utf8_at(std::string_view s);

// The text a reader parses: `text` without a leading UTF-8 byte-order mark, after checking that
// it is UTF-8. Throws shoal::Error naming `source`, the line, the field (column) and the byte.
std::string_view checked_text(const std::string& text, const std::string& source);

}  // namespace shoal::data
