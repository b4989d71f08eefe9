#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

#include "shoal/data/csv.h"
#include "shoal/data/text.h"

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

// One dialect both ways (RFC 4180): what append_csv_field writes, split_csv reads back as it was.
TEST(CsvDialect, FieldsRoundTripThroughTheWriterAndReader) {
  const std::vector<std::string_view> values = {"plain",    "a,b", R"(say "hi")", "two\nlines",
                                                " spaced ", "",    R"("quoted")", "é,ü"};
  std::string text;
  append_csv_row(text, values);
  append_csv_row(text, {"x", "y"});
  const size_t end = csv_record_end(text);
  ASSERT_NE(end, std::string::npos);
  EXPECT_EQ(text.substr(end + 1), "x,y\n");  // the line break inside quotes is not the end
  std::deque<std::string> decoded;
  std::vector<std::string_view> got;
  split_csv(std::string_view(text).substr(0, end), got, decoded);
  ASSERT_EQ(got.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(got[i], values[i]) << i;
}

TEST(CsvDialect, ReadsWhatOtherToolsWrite) {
  std::vector<std::string_view> got;
  // Quotes un-doubled, spaces outside quotes trimmed, inside kept; a bare field trimmed.
  split_csv(R"( "a ""b"" c" , d ,"",  " e ")", got);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0], R"(a "b" c)");
  EXPECT_EQ(got[1], "d");
  EXPECT_EQ(got[2], "");
  EXPECT_EQ(got[3], " e ");
  auto t = parse_numeric_csv("\"a,1\",\"b\"\"\"\n1,2\n", "t.csv");
  EXPECT_EQ(t.columns[0], "a,1");
  EXPECT_EQ(t.columns[1], "b\"");
}

}  // namespace csv_test
}  // namespace shoal::data
