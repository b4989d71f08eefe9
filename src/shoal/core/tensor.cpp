#include "shoal/core/tensor.h"

#include <fmt/ranges.h>

namespace shoal {

Shape::Shape(std::initializer_list<Index> d) {
  SHOAL_CHECK(d.size() <= kMaxRank, "shape rank {} exceeds {}", d.size(), kMaxRank);
  for (Index v : d) {
    SHOAL_CHECK(v >= 0, "negative dimension {} in shape", v);
    dims[static_cast<size_t>(rank++)] = v;
  }
}

Index Shape::numel() const {
  Index n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[static_cast<size_t>(i)];
  return n;
}

bool Shape::operator==(const Shape& o) const {
  if (rank != o.rank) return false;
  for (int i = 0; i < rank; ++i)
    if (dims[static_cast<size_t>(i)] != o.dims[static_cast<size_t>(i)]) return false;
  return true;
}

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < rank; ++i)
    s += fmt::format("{}{}", i ? ", " : "", dims[static_cast<size_t>(i)]);
  return s + "]";
}

void check_shape(const Shape& actual, const Shape& expected, const char* what) {
  if (!(actual == expected))
    throw Error(fmt::format("shape mismatch in {}", what),
                ErrorContext{.field = what, .expected = expected.str(), .actual = actual.str()});
}

}  // namespace shoal
