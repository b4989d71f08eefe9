#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/philox.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h

#include "dispatch.h"
#include "shoal/core/rng.h"
#include "shoal/kernels/philox.h"

HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DU = hn::ScalableTag<uint32_t>;
using VU = hn::Vec<DU>;

// 32×32 → 64-bit products of the lanes of a with the constant m: their high and low words.
HWY_INLINE void mulhilo(VU a, VU m, VU& hi, VU& lo) {
  const DU d;
  const hn::RepartitionToWide<DU> dw;
  const VU even = hn::BitCast(d, hn::MulEven(a, m));  // lanes 0, 2, 4, ...
  const VU a_odd = hn::BitCast(d, hn::ShiftRight<32>(hn::BitCast(dw, a)));
  const VU odd = hn::BitCast(d, hn::MulEven(a_odd, m));  // lanes 1, 3, ...
  lo = hn::OddEven(hn::BitCast(d, hn::ShiftLeft<32>(hn::BitCast(dw, odd))), even);
  hi = hn::OddEven(odd, hn::BitCast(d, hn::ShiftRight<32>(hn::BitCast(dw, even))));
}

// Random123's Philox-4x32 round: (hi0, lo0) = M0·c0, (hi1, lo1) = M1·c2,
// c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0); the key grows by the Weyl constants between
// the 10 rounds. The lanes run as kVectors independent chains, interleaved: one chain is bound
// by the multiplies' latency (7.8 ns per block in a probe, 3.6 with four chains). Integer
// arithmetic only: the same bits on every target.
void philox4x32_lanes_impl(uint64_t seed, const uint32_t (&ctr)[4][kPhiloxLanes],
                           uint32_t (&out)[4][kPhiloxLanes]) {
  const DU d;
  constexpr size_t kL = HWY_LANES(uint32_t);
  constexpr size_t kVectors = kPhiloxLanes / kL;
  static_assert(kPhiloxLanes % kL == 0, "whole vectors of lanes");
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  const VU m0 = hn::Set(d, static_cast<uint32_t>(PHILOX_M4x32_0));
  const VU m1 = hn::Set(d, static_cast<uint32_t>(PHILOX_M4x32_1));
  VU c[kVectors][4];
  for (size_t v = 0; v < kVectors; ++v)
    for (size_t w = 0; w < 4; ++w) c[v][w] = hn::LoadU(d, ctr[w] + kL * v);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += PHILOX_W32_0;
      k1 += PHILOX_W32_1;
    }
    const VU key0 = hn::Set(d, k0), key1 = hn::Set(d, k1);
    for (size_t v = 0; v < kVectors; ++v) {
      VU hi0, lo0, hi1, lo1;
      mulhilo(c[v][0], m0, hi0, lo0);
      mulhilo(c[v][2], m1, hi1, lo1);
      c[v][0] = hn::Xor(hn::Xor(hi1, c[v][1]), key0);
      c[v][1] = lo1;
      c[v][2] = hn::Xor(hn::Xor(hi0, c[v][3]), key1);
      c[v][3] = lo0;
    }
  }
  for (size_t v = 0; v < kVectors; ++v)
    for (size_t w = 0; w < 4; ++w) hn::StoreU(c[v][w], d, out[w] + kL * v);
}

}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace shoal::kernels {

HWY_EXPORT(philox4x32_lanes_impl);

void philox4x32_lanes(uint64_t seed, const uint32_t (&ctr)[4][kPhiloxLanes],
                      uint32_t (&out)[4][kPhiloxLanes]) {
  SHOAL_DISPATCH(philox4x32_lanes_impl)(seed, ctr, out);
}

void philox4x32_blocks(uint64_t seed, uint64_t stream, uint64_t a, uint64_t b0,
                       uint32_t (&words)[4 * kPhiloxLanes]) {
  alignas(32) uint32_t ctr[4][kPhiloxLanes], out[4][kPhiloxLanes];
  const auto b = static_cast<uint32_t>(b0);
  for (size_t l = 0; l < kPhiloxLanes; ++l) {
    ctr[0][l] = static_cast<uint32_t>(a);
    ctr[1][l] = static_cast<uint32_t>(a >> 32);
    ctr[2][l] = b + static_cast<uint32_t>(l);
    ctr[3][l] = static_cast<uint32_t>(stream);
  }
  philox4x32_lanes(seed, ctr, out);
  for (size_t l = 0; l < kPhiloxLanes; ++l)
    for (size_t w = 0; w < 4; ++w) words[4 * l + w] = out[w][l];
}

}  // namespace shoal::kernels
#endif  // HWY_ONCE
