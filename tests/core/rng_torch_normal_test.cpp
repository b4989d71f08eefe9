// RngStream::torch_normal_fill against torch's own CPU Tensor.normal_, from
// tests/golden/torch_normal.json (bench/peers/torch_normal_golden.py): after manual_seed, calls
// of sizes 1..100 (both of torch's paths, the cached second Box-Muller value carried from call
// to call), each followed by uniform_() of a few floats, which must come out bit for bit (the
// normal_ drew exactly torch's words). Each sequence ends with a large call kept as a hash and
// a sample. The normal values must be torch's within 1e-6 of max(|value|, 1), and all
// bit-exact (the hash too) when the golden came from torch's AVX2 kernel.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "shoal/core/error.h"
#include "shoal/core/rng.h"

namespace shoal {
namespace rng_torch_normal_test {

const nlohmann::json& golden() {
  static const nlohmann::json j = [] {
    const auto path = std::filesystem::path(SHOAL_GOLDEN_DIR) / "torch_normal.json";
    std::ifstream in(path);
    if (!in) throw Error("cannot open golden " + path.string());
    return nlohmann::json::parse(in);
  }();
  return j;
}

// FNV-1a 64 of the values' little-endian float32 bytes, as bench/peers/torch_normal_golden.py.
std::string fnv1a64(const std::vector<float>& values) {
  uint64_t h = 0xCBF29CE484222325u;
  for (const float v : values) {
    const auto bits = std::bit_cast<uint32_t>(v);
    for (int b = 0; b < 4; ++b) h = (h ^ ((bits >> (8 * b)) & 0xFFu)) * 0x100000001B3u;
  }
  return fmt::format("{:016x}", h);
}

TEST(TorchNormal, ReplaysTorchsNormalAndItsWordConsumption) {
  const auto& sequences = golden().at("sequences");
  ASSERT_EQ(sequences.size(), 4u);
  Index values = 0, exact = 0, uniforms = 0, hashed = 0, hashed_exact = 0;
  double max_err = 0;
  for (const auto& seq : sequences) {
    const auto seed = seq.at("seed").get<uint64_t>();
    const auto mean = seq.at("mean").get<double>(), std = seq.at("std").get<double>();
    RngStream rng(seed, /*stream, ignored=*/0, Generator::kTorchCpu);
    int call = 0;
    for (const auto& c : seq.at("calls")) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " call " + std::to_string(call++) + " " +
                   c.at("op").get<std::string>() + "(" + std::to_string(c.at("n").get<int>()) +
                   ")");
      const auto want = c.at("values").get<std::vector<double>>();
      std::vector<float> got(want.size());
      if (c.at("op") == "uniform") {
        for (float& v : got) v = rng.uniform();
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(got[i], static_cast<float>(want[i])) << "uniform " << i;
        uniforms += static_cast<Index>(want.size());
        continue;
      }
      // A digest call keeps every `every`-th value and the hash of all of them.
      const bool digest = c.at("op") == "normal_digest";
      const size_t every = digest ? c.at("every").get<size_t>() : 1;
      std::vector<float> all(static_cast<size_t>(c.at("n").get<Index>()));
      rng.torch_normal_fill(all.data(), static_cast<Index>(all.size()), mean, std);
      ASSERT_EQ(want.size(), (all.size() + every - 1) / every);
      for (size_t i = 0; i < want.size(); ++i) got[i] = all[i * every];
      if (digest) {
        const bool same = fnv1a64(all) == c.at("fnv1a64").get<std::string>();
        hashed_exact += same ? static_cast<Index>(all.size()) : 0;
        hashed += static_cast<Index>(all.size());
      }
      for (size_t i = 0; i < want.size(); ++i) {
        const double err = std::abs(got[i] - want[i]) / std::max(std::abs(want[i]), 1.0);
        EXPECT_LE(err, 1e-6) << "normal " << i << ": " << got[i] << " vs " << want[i];
        max_err = std::max(max_err, err);
        exact += got[i] == static_cast<float>(want[i]);
      }
      values += static_cast<Index>(want.size());
    }
  }
  EXPECT_GT(uniforms, 0);
  // torch's x86 kernel (AVX2, also run on AVX-512) is replayed operation by operation.
  const auto capability = golden().at("cpu_capability").get<std::string>();
  if (capability == "AVX2" || capability == "AVX512") {
    EXPECT_EQ(exact, values);
    EXPECT_EQ(hashed_exact, hashed);
  }
  std::printf(
      "torch normal_: %lld of %lld values bit-exact, %lld of %lld by hash, max error %.3g "
      "(golden: torch %s, %s)\n",
      static_cast<long long>(exact), static_cast<long long>(values),
      static_cast<long long>(hashed_exact), static_cast<long long>(hashed), max_err,
      golden().at("torch").get<std::string>().c_str(),
      golden().at("cpu_capability").get<std::string>().c_str());
}

// The cached second value of a small call is the first element of the next small call, also
// across a large call and uniform draws in between (neither touches the cache).
TEST(TorchNormal, CachedSecondValueCarriesOverLargeCallsAndUniforms) {
  RngStream a(7, 0, Generator::kTorchCpu), b(7, 0, Generator::kTorchCpu);
  float pair[2], first, second, large[20];
  a.torch_normal_fill(pair, 2);
  b.torch_normal_fill(&first, 1);
  b.torch_normal_fill(large, 20);
  (void)b.uniform();
  b.torch_normal_fill(&second, 1);
  EXPECT_EQ(first, pair[0]);
  EXPECT_EQ(second, pair[1]);
}

TEST(TorchNormal, OnlyForTheTorchGenerator) {
  RngStream philox(7, 0);
  float x[4];
  EXPECT_THROW(philox.torch_normal_fill(x, 4), Error);
}

}  // namespace rng_torch_normal_test
}  // namespace shoal
