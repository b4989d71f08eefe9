#include "shoal/core/error.h"

namespace shoal {

std::string format_error(const std::string& message, const ErrorContext& c) {
  std::string out;
  if (!c.file.empty()) {
    out += c.file;
    if (c.line >= 0) out += fmt::format(":{}", c.line);
    if (c.column >= 0) out += fmt::format(":{}", c.column);
    out += ": ";
  }
  if (!c.field.empty()) out += fmt::format("field '{}': ", c.field);
  out += message;
  // Only the parts that are known: "(expected E, got A)", "(expected E)" or "(got A)".
  if (!c.expected.empty() && !c.actual.empty())
    out += fmt::format(" (expected {}, got {})", c.expected, c.actual);
  else if (!c.expected.empty())
    out += fmt::format(" (expected {})", c.expected);
  else if (!c.actual.empty())
    out += fmt::format(" (got {})", c.actual);
  return out;
}

Error::Error(const std::string& message, ErrorContext context)
    : std::runtime_error(format_error(message, context)),
      context_(std::move(context)),
      message_(message) {}

}  // namespace shoal
