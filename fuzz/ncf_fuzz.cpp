// NCF files: the same bytes go to the three readers, so one corpus of ml-100k-style files
// covers them all.
//   *.rating          parse_ncf_ratings (with and without id bounds)
//   *.test.*          parse_ncf_test; the input is split at its first form feed (\f) into the
//                     rating text and the negative text (no \f: both are the whole input)
//   CSV               parse_ncf_csv, every extra column as context
#include <cstdint>
#include <string>

#include "fuzz_input.h"
#include "shoal/data/ncf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  const std::string bytes = fuzz::bytes_of(data, size);
  fuzz::expect_ok_or_error([&] { (void)data::parse_ncf_ratings(bytes, "fuzz.rating"); });
  fuzz::expect_ok_or_error([&] {
    (void)data::parse_ncf_ratings(bytes, "fuzz.rating", {.num_users = 8, .num_items = 16});
  });
  fuzz::expect_ok_or_error([&] {
    const size_t ff = bytes.find('\f');
    const std::string rating = ff == std::string::npos ? bytes : bytes.substr(0, ff);
    const std::string negative = ff == std::string::npos ? bytes : bytes.substr(ff + 1);
    (void)data::parse_ncf_test(rating, "fuzz.test.rating", negative, "fuzz.test.negative");
  });
  fuzz::expect_ok_or_error([&] { (void)data::parse_ncf_csv(bytes, "fuzz_ncf.csv", {}); });
  return 0;
}
