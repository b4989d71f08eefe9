#include <gtest/gtest.h>

#include "shoal/data/csv.h"

namespace shoal::data {
namespace csv_test {

std::string error_of(const std::string& text) {
  try {
    parse_numeric_csv(text, "t.csv");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(NumericCsv, ParsesHeaderAndRows) {
  auto t = parse_numeric_csv("a,b , c\n1,2.5,-3e2\r\n4, 5,6\n\n", "t.csv");
  ASSERT_EQ(t.cols(), 3);
  ASSERT_EQ(t.rows, 2);
  EXPECT_EQ(t.columns[1], "b");
  EXPECT_DOUBLE_EQ(t.at(0, 2), -300.0);
  EXPECT_DOUBLE_EQ(t.at(1, 1), 5.0);
  EXPECT_EQ(t.column("c"), 2);
}

TEST(NumericCsv, RejectsBadInputWithLocation) {
  EXPECT_EQ(error_of(""), "t.csv: empty file (expected a header line and rows, got nothing)");
  EXPECT_EQ(
      error_of("a,b\n"),
      "t.csv:1: no data rows (expected at least one row after the header, got only the header)");
  EXPECT_EQ(error_of("a,b\n1,2\n3\n"),
            "t.csv:3: wrong number of fields (expected 2 fields, got 1)");
  EXPECT_EQ(error_of("a,b\n1,x\n"),
            "t.csv:2:2: field 'b': not a finite number (expected a finite number, got 'x')");
  EXPECT_EQ(error_of("a,b\n1,nan\n"),
            "t.csv:2:2: field 'b': not a finite number (expected a finite number, got 'nan')");
  EXPECT_EQ(error_of("a,a\n1,2\n"), "t.csv:1:2: field 'a': duplicated column name");
  EXPECT_EQ(error_of("a,b\n1,2\n\n3,4\n"),
            "t.csv:3: blank line inside the table (expected a data row, got an empty line)");
}

TEST(NumericCsv, MissingColumnListsAvailable) {
  auto t = parse_numeric_csv("a,b\n1,2\n", "t.csv");
  try {
    t.column("y");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(
        e.what(),
        "t.csv: field 'y': no column named 'y' (expected one of: a, b, got no such column)");
  }
}

TEST(NumericCsv, MissingFileIsAnError) {
  EXPECT_THROW(read_numeric_csv("/nonexistent/file.csv"), Error);
}

}  // namespace csv_test
}  // namespace shoal::data
