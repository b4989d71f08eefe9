#include "shoal/data/gzip.h"

#include <zlib.h>

#include <fstream>
#include <limits>

#include "shoal/core/error.h"
#include "shoal/core/file_io.h"

namespace shoal::data {

bool is_gzip(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gunzip(const std::string& bytes, const std::string& source) {
  SHOAL_CHECK(bytes.size() < std::numeric_limits<uInt>::max(), "{}: gzip file too large", source);
  z_stream zs{};
  // 15 + 16: a gzip wrapper (not raw deflate, not zlib).
  if (inflateInit2(&zs, 15 + 16) != Z_OK)
    throw Error("zlib inflateInit2 failed", ErrorContext{.file = source});
  std::string out;
  out.resize(bytes.size() * 4 + 4096);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(bytes.size());
  size_t produced = 0;
  int rc = Z_OK;
  for (;;) {
    if (produced == out.size()) out.resize(out.size() * 2);
    const size_t room = std::min<size_t>(out.size() - produced, std::numeric_limits<uInt>::max());
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    zs.avail_out = static_cast<uInt>(room);
    rc = inflate(&zs, Z_NO_FLUSH);
    produced += room - zs.avail_out;
    if (rc == Z_STREAM_END) {
      // Concatenated members (gzip -c a b > c) are one file; trailing zero padding is not.
      if (zs.avail_in == 0 || *zs.next_in == 0) break;
      if (inflateReset(&zs) != Z_OK) break;
      continue;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) break;  // input ended mid-stream
    if (rc == Z_BUF_ERROR) continue;                   // needs more output room
    const std::string why = zs.msg != nullptr ? zs.msg : "inflate failed";
    inflateEnd(&zs);
    throw Error("corrupt gzip data",
                ErrorContext{.file = source, .expected = "a valid gzip stream", .actual = why});
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END)
    throw Error("truncated gzip file", ErrorContext{.file = source,
                                                    .expected = "a complete gzip stream",
                                                    .actual = fmt::format("the data ends after {} "
                                                                          "compressed bytes",
                                                                          bytes.size())});
  out.resize(produced);
  return out;
}

std::string read_text_file(const std::string& path) {
  // A folder or FIFO is refused by name (not read as a huge size, not waited on forever).
  std::string bytes = read_input_file(path);
  return is_gzip(bytes) ? gunzip(bytes, path) : bytes;
}

}  // namespace shoal::data
