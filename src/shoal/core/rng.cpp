#include "shoal/core/rng.h"

#include <algorithm>
#include <bit>
#include <numbers>

#include "shoal/core/error.h"

namespace shoal {
namespace {

// A float constant as avx_mathfun.h writes it: a double literal rounded to float.
constexpr float f32(double v) {
  return static_cast<float>(v);
}

// One lane of avx_mathfun.h's log256_ps (Cephes logf), x > 0: the same float operations in the
// same order, so the result is the vector one's to the bit. torch's build (-mfma, GCC's default
// contraction) fuses some multiply-adds of that code; the std::fma calls here are exactly those
// (found against torch's output), so the result does not depend on how shoal is compiled.
float cephes_log(float x) {
  x = std::max(x, std::bit_cast<float>(0x00800000u));  // no denormals
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const auto exponent = static_cast<int32_t>(bits >> 23) - 0x7f;
  x = std::bit_cast<float>((bits & ~0x7f800000u) | std::bit_cast<uint32_t>(0.5f));  // [0.5, 1)
  float e = static_cast<float>(exponent) + 1.0f;
  const bool below = x < f32(0.707106781186547524);
  const float tmp = below ? x : 0.0f;
  x = x - 1.0f;
  e = e - (below ? 1.0f : 0.0f);
  x = x + tmp;
  const float z = x * x;
  float y = f32(7.0376836292E-2);
  for (const double p : {-1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1, 1.4249322787E-1,
                         -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1}) {
    y = std::fma(y, x, f32(p));
  }
  y = y * x;
  y = std::fma(y, z, e * f32(-2.12194440e-4));
  y = std::fma(-z, 0.5f, y);
  x = x + y;
  x = std::fma(e, f32(0.693359375), x);
  return x;
}

// One lane of avx_mathfun.h's sincos256_ps (Cephes sinf / cosf), 0 <= x < 2^31 · π/4.
void cephes_sincos(float x, float* sin_out, float* cos_out) {
  uint32_t sign_sin = std::bit_cast<uint32_t>(x) & 0x80000000u;
  x = std::fabs(x);
  // The octant j, rounded up to even, and x reduced by j · π/4 in three parts.
  int32_t j = static_cast<int32_t>(x * f32(1.27323954473516));
  j = (j + 1) & ~1;
  const auto y = static_cast<float>(j);
  sign_sin ^= static_cast<uint32_t>(j & 4) << 29;
  const bool sin_poly = (j & 2) == 0;  // the sine polynomial gives sin here (else cos)
  x = std::fma(y, f32(-0.78515625), x);
  x = std::fma(y, f32(-2.4187564849853515625e-4), x);
  x = std::fma(y, f32(-3.77489497744594108e-8), x);
  const uint32_t sign_cos = static_cast<uint32_t>(~(j - 2) & 4) << 29;
  const float z = x * x;
  float c = f32(2.443315711809948E-005);
  c = std::fma(c, z, f32(-1.388731625493765E-003));
  c = std::fma(c, z, f32(4.166664568298827E-002));
  c = c * z;
  c = std::fma(c, z, -(z * 0.5f));
  c = c + 1.0f;
  float s = f32(-1.9515295891E-4);
  s = std::fma(s, z, f32(8.3321608736E-3));
  s = std::fma(s, z, f32(-1.6666654611E-1));
  s = s * z;
  s = std::fma(s, x, x);
  // The vector code's masked selection, kept as sums so signed zeros come out alike.
  const float sin_part_s = sin_poly ? s : 0.0f, sin_part_c = sin_poly ? 0.0f : c;
  const float sin_v = sin_part_c + sin_part_s, cos_v = (c - sin_part_c) + (s - sin_part_s);
  *sin_out = std::bit_cast<float>(std::bit_cast<uint32_t>(sin_v) ^ sign_sin);
  *cos_out = std::bit_cast<float>(std::bit_cast<uint32_t>(cos_v) ^ sign_cos);
}

// torch's NormalFill16<float> for AVX2 on 16 uniforms in [0, 1): element j < 8 pairs with j + 8.
void torch_box_muller_16(float* data, float mean, float std) {
  const auto two_pi = f32(2.0 * std::numbers::pi);
  for (int j = 0; j < 8; ++j) {
    const float u1 = 1.0f - data[j];  // (0, 1] for the log
    const float u2 = data[j + 8];
    const float radius = std::sqrt(-2.0f * cephes_log(u1));
    float sin_t, cos_t;
    cephes_sincos(two_pi * u2, &sin_t, &cos_t);
    data[j] = std::fma(radius * cos_t, std, mean);
    data[j + 8] = std::fma(radius * sin_t, std, mean);
  }
}

}  // namespace

uint32_t RngStream::next_u32() {
  if (mt_) return static_cast<uint32_t>((*mt_)());
  if (used_ == 4) {
    buf_ = philox_.block(counter_++, 0);
    used_ = 0;
  }
  return buf_[static_cast<size_t>(used_++)];
}

double RngStream::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_normal_;
  }
  const double u1 = u01_open0(next_u32());
  const double u2 = u01_open0(next_u32());
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double t = 2.0 * std::numbers::pi * u2;
  spare_normal_ = r * std::sin(t);
  has_spare_ = true;
  return r * std::cos(t);
}

void RngStream::torch_normal_fill(float* data, Index n, double mean, double std) {
  SHOAL_CHECK(mt_.has_value(),
              "torch_normal_fill replays torch's generator: the stream must be "
              "Generator::kTorchCpu");
  SHOAL_CHECK(n >= 0 && std >= 0.0, "torch_normal_fill: n ({}) and std ({}) must be >= 0", n, std);
  if (n >= 16) {
    const auto mean_f = static_cast<float>(mean), std_f = static_cast<float>(std);
    for (Index i = 0; i < n; ++i) data[i] = uniform();
    for (Index i = 0; i + 16 <= n; i += 16) torch_box_muller_16(data + i, mean_f, std_f);
    if (n % 16 != 0) {
      float* last = data + n - 16;
      for (int j = 0; j < 16; ++j) last[j] = uniform();
      torch_box_muller_16(last, mean_f, std_f);
    }
    return;
  }
  // torch's normal_distribution<double> on uniform_real_distribution<double>(random64()).
  const auto uniform53 = [this] {
    const uint64_t hi = next_u32();
    const uint64_t word = (hi << 32) | next_u32();
    return static_cast<double>(word & ((uint64_t{1} << 53) - 1)) * 0x1.0p-53;
  };
  for (Index i = 0; i < n; ++i) {
    double z;
    if (torch_next_normal_) {
      z = *torch_next_normal_;
      torch_next_normal_.reset();
    } else {
      const double u1 = uniform53();
      const double u2 = uniform53();
      const double r = std::sqrt(-2.0 * std::log1p(-u2));
      const double theta = 2.0 * std::numbers::pi * u1;
      torch_next_normal_ = r * std::sin(theta);
      z = r * std::cos(theta);
    }
    data[i] = static_cast<float>(z * std + mean);
  }
}

uint32_t RngStream::below(uint32_t n) {
  return uniform_below(n, [this] { return next_u32(); });
}

}  // namespace shoal
