// Static-features files (unique_id plus numeric columns, plain or gzip): read_static.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "shoal/data/timeseries.h"

namespace {

// Two series "a" and "b" to look static rows up for (static_matrix is what the models call).
const shoal::data::SeriesSet& two_series() {
  static const shoal::data::SeriesSet set =
      shoal::data::parse_series("unique_id,ds,y\na,1,1\na,2,2\nb,1,3\nb,2,4\n", "two_series");
  return set;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  const std::string bytes = fuzz::bytes_of(data, size);
  fuzz::expect_ok_or_error([&] {
    const data::StaticTable table =
        data::parse_static(fuzz::file_text(bytes, "fuzz_static.csv"), "fuzz_static.csv");
    const std::vector<Index> series = {0, 1};
    (void)data::static_matrix(table, two_series(), series, table.columns);
  });
  return 0;
}
