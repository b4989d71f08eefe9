// A numeric CSV table: a header of column names, then rows of numbers. Errors name the file,
// line, column and field, with what was expected and what was found.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shoal/core/tensor.h"

namespace shoal::data {

struct NumericTable {
  std::vector<std::string> columns;
  std::vector<double> values;  // row-major [rows, columns]
  Index rows = 0;

  Index cols() const { return static_cast<Index>(columns.size()); }
  // Index of a column by name; throws shoal::Error naming the file's columns if absent.
  Index column(const std::string& name) const;
  double at(Index r, Index c) const { return values[static_cast<size_t>(r * cols() + c)]; }
  std::string source;  // file the table was read from, for error messages
};

// Reads a comma-separated file (plain or gzip) with a header line. Every field must parse as a
// finite number. Blank lines at the end are ignored; empty files, header-only files, ragged rows,
// duplicated column names and non-numeric or non-finite fields are rejected with shoal::Error.
NumericTable read_numeric_csv(const std::string& path);
// Same, from text in memory (`source` names it in errors).
NumericTable parse_numeric_csv(const std::string& text, const std::string& source);

// The table's rows in a seeded random order as row-major x (every column but `target`) and y
// (the target column), appended; callers take the first rows as the training split.
void shuffled_xy(const NumericTable& t, Index target, uint64_t seed, std::vector<double>& x,
                 std::vector<double>& y);

}  // namespace shoal::data
