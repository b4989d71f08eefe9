// Numeric CSV tables (the MLP's data, plain or gzip): read_numeric_csv, then the split that
// training does with the first column as target.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "shoal/data/csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  const std::string bytes = fuzz::bytes_of(data, size);
  fuzz::expect_ok_or_error([&] {
    const data::NumericTable t =
        data::parse_numeric_csv(fuzz::file_text(bytes, "fuzz.csv"), "fuzz.csv");
    const Index target = t.column(t.columns.front());
    std::vector<double> x, y;
    data::shuffled_xy(t, target, 1, x, y);
  });
  return 0;
}
