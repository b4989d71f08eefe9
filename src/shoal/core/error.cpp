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
  if (!c.expected.empty() || !c.actual.empty()) {
    out += fmt::format(" (expected {}, got {})", c.expected.empty() ? "?" : c.expected,
                       c.actual.empty() ? "?" : c.actual);
  }
  return out;
}

Error::Error(const std::string& message, ErrorContext context)
    : std::runtime_error(format_error(message, context)),
      context_(std::move(context)),
      message_(message) {}

}  // namespace shoal
