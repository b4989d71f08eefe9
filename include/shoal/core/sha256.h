// SHA-256 (FIPS 180-4) of a byte string, as lowercase hex: the checksum a saved model's
// model.json records for each of its files (Python's hashlib.sha256(b).hexdigest() writes the
// same), so a damaged or swapped file is named on load instead of read as a model.
#pragma once

#include <string>
#include <string_view>

namespace shoal {

std::string sha256_hex(std::string_view bytes);

}  // namespace shoal
