// shoal::Error: the one exception type shoal throws for bad input, bad configs and bad shapes.
// It carries where the problem is (file, line, column, field) and what was expected versus
// found, so the CLI can print one line and Python can raise ValueError with the same text.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace shoal {

struct ErrorContext {
  std::string file;      // path of the offending input, if any
  int64_t line = -1;     // 1-based; -1 when not applicable
  int64_t column = -1;   // 1-based column number; -1 when not applicable
  std::string field;     // column name, option or config key
  std::string expected;  // what a valid value looks like
  std::string actual;    // what was found
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, ErrorContext context = {});
  const ErrorContext& context() const noexcept { return context_; }
  const std::string& message() const noexcept { return message_; }

 private:
  ErrorContext context_;
  std::string message_;
};

// Formats "file:line:col: field 'f': message (expected E, got A)"; parts that are unset are
// left out (also within the parentheses). Used for Error::what().
std::string format_error(const std::string& message, const ErrorContext& context);

}  // namespace shoal

// Validation at the edges (readers, plans, configs): always on.
#define SHOAL_CHECK(cond, ...)                        \
  do {                                                \
    if (!(cond)) [[unlikely]]                         \
      throw ::shoal::Error(fmt::format(__VA_ARGS__)); \
  } while (0)

// Invariants inside kernels and the step loop: checked in debug builds only.
#ifdef NDEBUG
#define SHOAL_DCHECK(cond) ((void)0)
#else
#define SHOAL_DCHECK(cond)                                                              \
  do {                                                                                  \
    if (!(cond)) [[unlikely]]                                                           \
      throw ::shoal::Error(                                                             \
          fmt::format("internal check failed: {} ({}:{})", #cond, __FILE__, __LINE__)); \
  } while (0)
#endif
