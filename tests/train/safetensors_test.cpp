#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "shoal/models/ncf.h"
#include "shoal/train/checkpoint.h"
#include "shoal/train/safetensors.h"

namespace shoal {
namespace safetensors_test {

using train::decode_safetensors;
using train::encode_safetensors;
using train::TensorRef;

std::string sample() {
  static const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {-1.5f};
  const std::vector<TensorRef> refs = {{"w", {2, 3}, a.data()}, {"b", {1}, b.data()}};
  return encode_safetensors(refs, {{"format", "pt"}});
}

uint64_t header_len(const std::string& s) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(static_cast<unsigned char>(s[static_cast<size_t>(i)])) << (8 * i);
  return n;
}

TEST(Safetensors, RoundTrip) {
  const std::string s = sample();
  EXPECT_EQ(header_len(s) % 8, 0u);
  const auto f = decode_safetensors(s, "mem");
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.tensors[0].name, "w");
  EXPECT_EQ(f.tensors[0].shape, (Shape{2, 3}));
  EXPECT_EQ(f.tensors[0].data, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(f.find("b")->data, (std::vector<float>{-1.5f}));
  EXPECT_EQ(f.metadata.at("format"), "pt");
  // The header is the documented JSON.
  const std::string json = s.substr(8, header_len(s));
  EXPECT_NE(json.find(R"("w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})"),
            std::string::npos)
      << json;
}

// I32 / I64 tensors (a saved model's id offsets) round-trip exactly, beside F32 ones; a float
// checkpoint tensor given as integers is refused.
// The index is what Python views the tensors through: each tensor's dtype, shape and byte range
// after the header, in data order, without copying the data.
TEST(Safetensors, IndexGivesEachTensorsDtypeShapeAndBytes) {
  const std::string s = sample();
  const train::SafetensorsIndex index = train::index_safetensors(s, "sample");
  EXPECT_EQ(index.data_start, 8 + header_len(s));
  ASSERT_EQ(index.entries.size(), 2u);
  EXPECT_EQ(index.entries[0].name, "w");
  EXPECT_EQ(index.entries[0].dtype, "F32");
  EXPECT_EQ(index.entries[0].shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(index.entries[0].begin, 0u);
  EXPECT_EQ(index.entries[0].end, 24u);
  EXPECT_EQ(index.entries[1].name, "b");
  EXPECT_EQ(index.entries[1].begin, 24u);
  float b = 0;
  std::memcpy(&b, s.data() + index.data_start + index.entries[1].begin, 4);
  EXPECT_EQ(b, -1.5f);
  EXPECT_EQ(index.metadata.at("format"), "pt");
}

TEST(Safetensors, IntegerTensors) {
  const std::vector<int32_t> a = {-7, 0, 2147483647};
  const std::vector<int64_t> b = {int64_t{1} << 40, -1};
  const std::vector<float> c = {0.5f};
  const std::vector<TensorRef> refs = {{.name = "a", .shape = {3}, .i32 = a.data()},
                                       {.name = "b", .shape = {2}, .i64 = b.data()},
                                       {.name = "c", .shape = {1}, .data = c.data()}};
  const std::string s = encode_safetensors(refs);
  const std::string json = s.substr(8, header_len(s));
  EXPECT_NE(json.find(R"("a":{"dtype":"I32","shape":[3],"data_offsets":[0,12]})"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("b":{"dtype":"I64","shape":[2],"data_offsets":[12,28]})"),
            std::string::npos)
      << json;
  const auto f = decode_safetensors(s, "mem");
  ASSERT_TRUE(f.find("a")->integer);
  EXPECT_EQ(f.find("a")->ints, (std::vector<int64_t>{-7, 0, 2147483647}));
  EXPECT_EQ(f.find("b")->ints, (std::vector<int64_t>{int64_t{1} << 40, -1}));
  EXPECT_FALSE(f.find("c")->integer);
  EXPECT_EQ(f.find("c")->data, c);
}

TEST(Safetensors, RejectsLyingOrTruncatedFiles) {
  const std::string s = sample();
  EXPECT_THROW(decode_safetensors(s.substr(0, 5), "mem"), Error);
  // Header length beyond the file.
  std::string lying = s;
  lying[0] = static_cast<char>(0xff);
  lying[1] = static_cast<char>(0xff);
  EXPECT_THROW(decode_safetensors(lying, "mem"), Error);
  // Data truncated.
  EXPECT_THROW(decode_safetensors(s.substr(0, s.size() - 4), "mem"), Error);
  // Not JSON.
  std::string garbage = s;
  garbage[8] = '#';
  EXPECT_THROW(decode_safetensors(garbage, "mem"), Error);
  // Size that disagrees with the shape; overlapping tensors; unknown dtype.
  auto with_header = [](const std::string& json, size_t data_bytes) {
    std::string h = json;
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i)
      out[static_cast<size_t>(i)] = static_cast<char>((h.size() >> (8 * i)) & 0xff);
    return out + h + std::string(data_bytes, '\0');
  };
  EXPECT_THROW(
      decode_safetensors(
          with_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "m"),
      Error);
  EXPECT_THROW(
      decode_safetensors(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                     R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                     12),
                         "m"),
      Error);
  EXPECT_THROW(decode_safetensors(
                   with_header(R"({"a":{"dtype":"I8","shape":[2],"data_offsets":[0,2]}})", 2), "m"),
               Error);
  try {
    decode_safetensors(with_header(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8),
                       "f.st");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("f.st"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'a'"), std::string::npos) << e.what();
  }
  // F64 is read and converted.
  std::string f64 = with_header(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 0);
  const double v = 0.25;
  f64.append(reinterpret_cast<const char*>(&v), 8);
  EXPECT_EQ(decode_safetensors(f64, "m").tensors[0].data, (std::vector<float>{0.25f}));
}

TEST(Checkpoint, NcfRoundTripAndMismatch) {
  using models::Ncf;
  const Ncf<float>::Config cfg{.num_users = 5, .num_items = 7, .factors = 3, .layers = {6, 4}};
  Ncf<float> a(cfg), b(cfg);
  Planner pa, pb;
  a.plan(pa, 2);
  b.plan(pb, 2);
  Arena aa(std::move(pa)), ab(std::move(pb));
  RngStream rng(1, 0);
  a.init(rng);
  const std::string path = ::testing::TempDir() + "ncf_ckpt.safetensors";
  train::save_checkpoint(aa, path, {{"model", "neumf"}});
  const auto meta = train::load_checkpoint(ab, path);
  EXPECT_EQ(meta.at("model"), "neumf");
  EXPECT_EQ(std::memcmp(aa.params<float>(), ab.params<float>(),
                        static_cast<size_t>(aa.param_elems()) * sizeof(float)),
            0);
  // A model of another shape refuses the file.
  Ncf<float> c({.num_users = 6, .num_items = 7, .factors = 3, .layers = {6, 4}});
  Planner pc;
  c.plan(pc, 2);
  Arena ac(std::move(pc));
  EXPECT_THROW(train::load_checkpoint(ac, path), Error);
  std::remove(path.c_str());
}

}  // namespace safetensors_test
}  // namespace shoal
