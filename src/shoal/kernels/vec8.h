// Internal to src/shoal/kernels: groups of 8 floats over Highway, for the kernels whose data
// come in 8-float groups (the lane-interleaved Linear's 8 models, NCF's 8-wide tiles and
// logits). A group is one vector where the target has 8 float lanes or more (AVX2; AVX-512
// runs its 256-bit form, since the layout has no 16-float unit), two where it has 4 (SSE4,
// NEON). The operations are Highway's, so every target compiles the same code.
//
// Included after simd.h by a file compiled once per target: the guard toggles per target, as
// Highway's own per-target headers do.
#if defined(SHOAL_KERNELS_VEC8_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SHOAL_KERNELS_VEC8_H_
#undef SHOAL_KERNELS_VEC8_H_
#else
#define SHOAL_KERNELS_VEC8_H_
#endif

#include <cstddef>

#include "bce_lanes.h"
#include "shoal/core/tensor.h"

HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {
namespace v8 {

namespace hn = hwy::HWY_NAMESPACE;

// One part of a group: 8 lanes, or 4 where the target's vectors hold 4 floats.
using D = hn::CappedTag<float, 8>;
using V = hn::Vec<D>;
inline constexpr int kPart = static_cast<int>(hn::MaxLanes(D()));
inline constexpr int kParts = 8 / kPart;
static_assert(kPart * kParts == 8, "a group is 8 floats in 1 or 2 vectors");

struct F8 {
  // Declared, so that it is compiled with the target's options (HWY_INLINE under
  // HWY_BEFORE_NAMESPACE); the implicit one is not, and cannot inline Highway's.
  HWY_INLINE F8() {}
  V p[kParts];
};

HWY_INLINE F8 load(const float* HWY_RESTRICT x) {
  F8 r;
  for (int k = 0; k < kParts; ++k) r.p[k] = hn::LoadU(D(), x + k * kPart);
  return r;
}
// x 32-byte aligned.
HWY_INLINE F8 load_aligned(const float* HWY_RESTRICT x) {
  F8 r;
  for (int k = 0; k < kParts; ++k) r.p[k] = hn::Load(D(), x + k * kPart);
  return r;
}
HWY_INLINE void store(const F8& v, float* HWY_RESTRICT x) {
  for (int k = 0; k < kParts; ++k) hn::StoreU(v.p[k], D(), x + k * kPart);
}
HWY_INLINE void store_aligned(const F8& v, float* HWY_RESTRICT x) {
  for (int k = 0; k < kParts; ++k) hn::Store(v.p[k], D(), x + k * kPart);
}
HWY_INLINE F8 set(float x) {
  F8 r;
  for (int k = 0; k < kParts; ++k) r.p[k] = hn::Set(D(), x);
  return r;
}
HWY_INLINE F8 zero() {
  F8 r;
  for (int k = 0; k < kParts; ++k) r.p[k] = hn::Zero(D());
  return r;
}

#define SHOAL_V8_BINARY(name, op)                                     \
  HWY_INLINE F8 name(const F8& a, const F8& b) {                      \
    F8 r;                                                             \
    for (int k = 0; k < kParts; ++k) r.p[k] = hn::op(a.p[k], b.p[k]); \
    return r;                                                         \
  }
SHOAL_V8_BINARY(add, Add)
SHOAL_V8_BINARY(sub, Sub)
SHOAL_V8_BINARY(mul, Mul)
SHOAL_V8_BINARY(max, Max)
#undef SHOAL_V8_BINARY

// a·b + c, one rounding.
HWY_INLINE F8 mul_add(const F8& a, const F8& b, const F8& c) {
  F8 r;
  for (int k = 0; k < kParts; ++k) r.p[k] = hn::MulAdd(a.p[k], b.p[k], c.p[k]);
  return r;
}
HWY_INLINE F8 relu(const F8& x) {
  F8 r;
  for (int k = 0; k < kParts; ++k) r.p[k] = hn::Max(x.p[k], hn::Zero(D()));
  return r;
}
// d where y > 0, else +0 (ReLU's backward from its output).
HWY_INLINE F8 relu_mask(const F8& y, const F8& d) {
  F8 r;
  for (int k = 0; k < kParts; ++k)
    r.p[k] = hn::IfThenElseZero(hn::Gt(y.p[k], hn::Zero(D())), d.p[k]);
  return r;
}
// The sum of the 8 lanes.
HWY_INLINE float sum(const F8& v) {
  V s = v.p[0];
  for (int k = 1; k < kParts; ++k) s = hn::Add(s, v.p[k]);
  return hn::GetLane(hn::SumOfLanes(D(), s));
}

// A full vector of tag DW added pairwise down to one part (8 lanes, or the vector itself where it
// has no more than 8).
template <class DW, class VW>
HWY_INLINE V fold8(DW, VW v) {
  if constexpr (hn::MaxLanes(DW()) > 8) {
    const hn::Half<DW> dh;
    return hn::Add(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v));
  } else {
    return v;
  }
}

// Keeps v in registers: without it gcc folds a load of an operand into every FMA that uses it
// (one load per use instead of one), and a register-blocked tile runs at the load ports' pace.
HWY_INLINE void pin(F8& v) {
  for (int k = 0; k < kParts; ++k) {
#if HWY_ARCH_X86
    asm("" : "+x"(v.p[k].raw));
#elif HWY_ARCH_ARM_A64
    asm("" : "+w"(v.p[k].raw));
#endif
  }
}

// Lanes [0, n) of x, the others 0 (n ≤ 8); reads nothing past x + n.
HWY_INLINE F8 load_first(const float* x, Index n) {
#if HWY_TARGET <= HWY_AVX2  // masked loads that fault only on the lanes they read
  F8 r;
  r.p[0] = hn::MaskedLoad(hn::FirstN(D(), static_cast<size_t>(n)), D(), x);
  return r;
#else
  alignas(32) float t[8] = {};
  for (Index i = 0; i < n; ++i) t[i] = x[i];
  return load_aligned(t);
#endif
}
// Writes lanes [0, n) of v to x (n ≤ 8), nothing past x + n.
HWY_INLINE void store_first(const F8& v, float* x, Index n) {
#if HWY_TARGET <= HWY_AVX2
  hn::BlendedStore(v.p[0], hn::FirstN(D(), static_cast<size_t>(n)), D(), x);
#else
  alignas(32) float t[8];
  store_aligned(v, t);
  for (Index i = 0; i < n; ++i) x[i] = t[i];
#endif
}
// Lanes [0, n) kept, the others +0.
HWY_INLINE F8 first(const F8& v, Index n) {
  F8 r;
  for (int k = 0; k < kParts; ++k) {
    const Index m = n - k * kPart;
    const size_t live = m <= 0       ? 0
                        : m >= kPart ? static_cast<size_t>(kPart)
                                     : static_cast<size_t>(m);
    r.p[k] = hn::IfThenElseZero(hn::FirstN(D(), live), v.p[k]);
  }
  return r;
}

// A 4 × 4 transpose within each 128-bit block: lane j of block b of out[i] is lane i of block b
// of in[j].
HWY_INLINE void transpose4(const V (&in)[4], V (&out)[4]) {
  const D d;
  const hn::Repartition<uint64_t, D> du;
  const V t0 = hn::InterleaveLower(d, in[0], in[1]);
  const V t1 = hn::InterleaveUpper(d, in[0], in[1]);
  const V t2 = hn::InterleaveLower(d, in[2], in[3]);
  const V t3 = hn::InterleaveUpper(d, in[2], in[3]);
  out[0] = hn::BitCast(d, hn::InterleaveLower(du, hn::BitCast(du, t0), hn::BitCast(du, t2)));
  out[1] = hn::BitCast(d, hn::InterleaveUpper(du, hn::BitCast(du, t0), hn::BitCast(du, t2)));
  out[2] = hn::BitCast(d, hn::InterleaveLower(du, hn::BitCast(du, t1), hn::BitCast(du, t3)));
  out[3] = hn::BitCast(d, hn::InterleaveUpper(du, hn::BitCast(du, t1), hn::BitCast(du, t3)));
}

// Lane r of the result = the sum of the 8 lanes of s[r].
HWY_INLINE F8 lane_sums(const F8 (&s)[8]) {
  const D d;
  V w[2];
  for (int h = 0; h < 2; ++h) {  // rows 4h .. 4h + 3
    V in[4], out[4];
    for (int j = 0; j < 4; ++j) {
      in[j] = s[4 * h + j].p[0];
      for (int k = 1; k < kParts; ++k) in[j] = hn::Add(in[j], s[4 * h + j].p[k]);
    }
    transpose4(in, out);
    w[h] = hn::Add(hn::Add(out[0], out[1]), hn::Add(out[2], out[3]));
  }
  F8 r;
  if constexpr (kParts == 2) {
    r.p[0] = w[0];
    r.p[kParts - 1] = w[1];
  } else {
    // Block 0 of w[h] holds lanes 0–3 of rows 4h.., block 1 lanes 4–7.
    r.p[0] = hn::Add(hn::ConcatLowerLower(d, w[1], w[0]), hn::ConcatUpperUpper(d, w[1], w[0]));
  }
  return r;
}

// 8 rows of 8 floats transposed: out[j] lane l = in[l] lane j.
HWY_INLINE void transpose8(const F8 (&in)[8], F8 (&out)[8]) {
  const D d;
  if constexpr (kParts == 2) {
    // Four 4 × 4 blocks: rows 4h.., columns 4k.. become part h of groups 4k...
    for (int h = 0; h < 2; ++h)
      for (int k = 0; k < 2; ++k) {
        V a[4], t[4];
        for (int j = 0; j < 4; ++j) a[j] = in[4 * h + j].p[k % kParts];
        transpose4(a, t);
        for (int j = 0; j < 4; ++j) out[4 * k + j].p[h % kParts] = t[j];
      }
  } else {
    V lo[4], hi[4], t[4];
    for (int j = 0; j < 4; ++j) t[j] = in[j].p[0];
    transpose4(t, lo);
    for (int j = 0; j < 4; ++j) t[j] = in[4 + j].p[0];
    transpose4(t, hi);
    for (int j = 0; j < 4; ++j) {
      out[j].p[0] = hn::ConcatLowerLower(d, hi[j], lo[j]);
      out[j + 4].p[0] = hn::ConcatUpperUpper(d, hi[j], lo[j]);
    }
  }
}

// BCE-with-logits, one instance per lane, for any float vector: returns the losses and writes
// dz. The scalar form's operations (see bce_ref.cpp); where it leaves a product and an add to
// the compiler's contraction, the lanes may round once less or more (a few ulps at most, within
// the tested accuracy). Every target and width computes the same bits per lane.
template <class DF, class VF = hn::Vec<DF>>
HWY_INLINE VF bce_logit(DF d, VF z, VF y, VF scale, VF& dz) {
  using namespace detail;
  const hn::RebindToSigned<DF> di;
  const VF one = hn::Set(d, 1.0f), zero = hn::Zero(d);
  const VF sign = hn::Set(d, -0.0f);
  // exp_nonpositive(−|z|): std::max(x, floor), x itself when x is NaN. x86's max(a, b) is
  // a > b ? a : b, so max(floor, x); other targets' max returns NaN, hence the select.
  const VF nabs = hn::Or(z, sign);
  const VF floor = hn::Set(d, kExpFloor);
#if HWY_ARCH_X86
  const VF x = hn::Max(floor, nabs);
#else
  const VF x = hn::IfThenElse(hn::Lt(nabs, floor), floor, nabs);
#endif
  const VF round = hn::Set(d, kRound);
  const VF k = hn::Sub(hn::MulAdd(x, hn::Set(d, kLog2e), round), round);
  const VF nk = hn::Xor(k, sign);
  const VF r = hn::MulAdd(nk, hn::Set(d, kLn2Lo), hn::MulAdd(nk, hn::Set(d, kLn2Hi), x));
  VF p = hn::Set(d, kExpPoly[0]);
  for (int i = 1; i < 6; ++i) p = hn::MulAdd(p, r, hn::Set(d, kExpPoly[i]));
  p = hn::Add(hn::MulAdd(hn::Mul(p, r), r, r), one);
  const auto bits = hn::ShiftLeft<23>(hn::Add(hn::ConvertTo(di, k), hn::Set(di, 127)));
  const VF e = hn::Mul(p, hn::BitCast(d, bits));
  // σ(z) and dz.
  const VF inv = hn::Div(one, hn::Add(one, e));
  const VF sig = hn::IfThenElse(hn::Ge(z, zero), inv, hn::Mul(e, inv));
  dz = hn::Mul(scale, hn::Sub(sig, y));
  // log1p_unit(e).
  const VF s = hn::Div(e, hn::Add(hn::Set(d, 2.0f), e));
  const VF s2 = hn::Mul(s, s);
  VF q = hn::Set(d, 1.0f / 17);
  for (int i = 15; i >= 1; i -= 2) q = hn::MulAdd(q, s2, hn::Set(d, 1.0f / static_cast<float>(i)));
  const VF log1p = hn::Mul(hn::Mul(hn::Set(d, 2.0f), s), q);
  // std::max(z, 0.0f): z unless 0 > z (−0 and NaN kept).
#if HWY_ARCH_X86
  const VF relu_z = hn::Max(zero, z);
#else
  const VF relu_z = hn::IfThenElse(hn::Gt(zero, z), zero, z);
#endif
  return hn::Add(hn::MulAdd(hn::Xor(z, sign), y, relu_z), log1p);
}

HWY_INLINE F8 bce_logit(const F8& z, const F8& y, const F8& scale, F8& dz) {
  F8 r;
  for (int k = 0; k < kParts; ++k) r.p[k] = bce_logit(D(), z.p[k], y.p[k], scale.p[k], dz.p[k]);
  return r;
}

}  // namespace v8
}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels
HWY_AFTER_NAMESPACE();

#endif  // SHOAL_KERNELS_VEC8_H_ toggle
