// safetensors files (checkpoints): decode_safetensors, and for a file it accepts, a round trip
// through encode_safetensors that must give back the same tensors.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "shoal/train/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  fuzz::expect_ok_or_error([&] {
    const train::SafetensorsFile file = train::decode_safetensors(bytes, "fuzz.safetensors");
    std::vector<train::TensorRef> refs;
    for (const train::LoadedTensor& t : file.tensors) {
      (void)file.find(t.name);
      refs.push_back({t.name, t.shape, t.data.data()});
    }
    const std::string again = train::encode_safetensors(refs, file.metadata);
    const train::SafetensorsFile back = train::decode_safetensors(again, "round trip");
    // A file shoal accepted must survive its own writer unchanged.
    if (back.tensors.size() != file.tensors.size() || back.metadata != file.metadata) std::abort();
    for (size_t i = 0; i < back.tensors.size(); ++i) {
      const auto& a = file.tensors[i];
      const auto& b = back.tensors[i];
      if (a.name != b.name || a.shape != b.shape || a.data.size() != b.data.size() ||
          (!a.data.empty() &&
           std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) != 0))
        std::abort();
    }
  });
  return 0;
}
