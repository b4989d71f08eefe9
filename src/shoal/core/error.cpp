#include "shoal/core/error.h"

namespace shoal {
namespace {

// A value quoted from the input is cut to its first 80 bytes (at a UTF-8 boundary), so that one
// huge field (a line without newlines, a binary file) still gives a one-line, readable message.
std::string cut(const std::string& s) {
  constexpr size_t kMax = 80;
  if (s.size() <= kMax) return s;
  size_t n = kMax;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return fmt::format("{}... ({} bytes)", s.substr(0, n), s.size());
}

}  // namespace

std::string format_error(const std::string& message, const ErrorContext& c) {
  std::string out;
  if (!c.file.empty()) {
    out += c.file;
    if (c.line >= 0) out += fmt::format(":{}", c.line);
    if (c.column >= 0) out += fmt::format(":{}", c.column);
    out += ": ";
  }
  if (!c.field.empty()) out += fmt::format("field '{}': ", cut(c.field));
  out += message;
  // Only the parts that are known: "(expected E, got A)", "(expected E)" or "(got A)".
  if (!c.expected.empty() && !c.actual.empty())
    out += fmt::format(" (expected {}, got {})", c.expected, cut(c.actual));
  else if (!c.expected.empty())
    out += fmt::format(" (expected {})", c.expected);
  else if (!c.actual.empty())
    out += fmt::format(" (got {})", cut(c.actual));
  return out;
}

Error::Error(const std::string& message, ErrorContext context)
    : std::runtime_error(format_error(message, context)),
      context_(std::move(context)),
      message_(message) {}

}  // namespace shoal
