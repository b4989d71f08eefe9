// Whole-file reads that see through gzip: a file whose first two bytes are the gzip magic
// (1f 8b) is inflated with zlib (concatenated members included); any other file is returned
// as is. A truncated or corrupt gzip stream is a shoal::Error naming the file.
#pragma once

#include <string>

namespace shoal::data {

// The file's bytes, decompressed when it is gzip.
std::string read_text_file(const std::string& path);
// Inflates gzip bytes held in memory (`source` names them in errors).
std::string gunzip(const std::string& bytes, const std::string& source);
// True when the bytes start with the gzip magic number.
bool is_gzip(const std::string& bytes);

}  // namespace shoal::data
