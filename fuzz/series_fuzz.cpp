// Long-format time-series files (CSV or CSV.gz): read_series as the CLI and fleet use it, with
// and without a required y column (a futr_df has none).
#include <cstdint>
#include <string>

#include "fuzz_input.h"
#include "shoal/data/timeseries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  const std::string bytes = fuzz::bytes_of(data, size);
  for (const bool require_y : {true, false}) {
    fuzz::expect_ok_or_error([&] {
      const data::SeriesSet set =
          data::parse_series(fuzz::file_text(bytes, "fuzz.csv"), "fuzz.csv", require_y);
      // What every consumer touches first: lengths, lookups, ds formatting and stepping.
      if (set.n_series() > 0) {
        (void)set.max_length();
        (void)set.min_length();
        (void)set.find(set.ids.back());
        const int64_t last = set.ds_of(0).back();
        (void)data::format_ds(data::advance(last, set.freq[0]), set.time_kind, set.date_only);
        data::check_min_length(set, 2, "fuzz");
      }
    });
  }
  return 0;
}
