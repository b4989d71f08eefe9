// The NCF scoring pass (relu_tower_score.h): register tiles of 8-float groups (vec8.h) on every
// target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/relu_tower_score.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h
#include "vec8.h"  // per target

#include "dispatch.h"
#include "shoal/kernels/relu_tower_score.h"

HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {
namespace {

using v8::F8;

// L2 = 8·B2 outputs of the second layer, L3 = 8; R rows per tile: R·B2 accumulators stay in
// registers beside the B2 weight vectors being broadcast against (R·B2 ≤ 12 of the 16 ymm).
template <int B2, Index kRows>
void score_tiles(const ReluTowerScoreRows& r) {
  const Index l1 = r.l1;
  alignas(32) float h1[kRows][64];
  alignas(32) float h2[kRows][8 * B2];
  const F8 wp3 = v8::load(r.wp3);
  const F8 b3 = v8::load(r.b3);
  for (Index n0 = 0; n0 < r.n; n0 += kRows) {
    const Index rows = r.n - n0 < kRows ? r.n - n0 : kRows;
    // h1 = relu(a + proj_i[item]), stored for the broadcasts.
    for (Index t = 0; t < kRows; ++t) {
      const float* p = r.proj_i + static_cast<Index>(r.items[n0 + (t < rows ? t : 0)]) * l1;
      for (Index j = 0; j < l1; j += 8)
        v8::store_aligned(v8::relu(v8::add(v8::load(r.a + j), v8::load(p + j))), h1[t] + j);
    }
    // h2 = relu(h1·W2ᵀ + b2): per input k, one row of W2ᵀ against every tile row.
    F8 acc[kRows][B2];
    for (int b = 0; b < B2; ++b) {
      const F8 bias = v8::load(r.b2 + 8 * b);
      for (Index t = 0; t < kRows; ++t) acc[t][b] = bias;
    }
    for (Index k = 0; k < l1; ++k) {
      F8 w[B2];
      for (int b = 0; b < B2; ++b) w[b] = v8::load(r.w2_t + k * 8 * B2 + 8 * b);
      for (Index t = 0; t < kRows; ++t) {
        const F8 x = v8::set(h1[t][k]);
        for (int b = 0; b < B2; ++b) acc[t][b] = v8::mul_add(x, w[b], acc[t][b]);
      }
    }
    for (Index t = 0; t < kRows; ++t)
      for (int b = 0; b < B2; ++b) v8::store_aligned(v8::relu(acc[t][b]), h2[t] + 8 * b);
    // h3 = relu(h2·W3ᵀ + b3), then the predict dot and the GMF side.
    F8 h3[kRows];
    for (Index t = 0; t < kRows; ++t) h3[t] = b3;
    for (Index k = 0; k < 8 * B2; ++k) {
      const F8 w = v8::load(r.w3_t + k * 8);
      for (Index t = 0; t < kRows; ++t) h3[t] = v8::mul_add(v8::set(h2[t][k]), w, h3[t]);
    }
    for (Index t = 0; t < rows; ++t) {
      F8 v = v8::mul(v8::relu(h3[t]), wp3);
      const float* q = r.qg + static_cast<Index>(r.items[n0 + t]) * r.f;
      float z = r.bp;
      if (r.f == 8) {
        v = v8::mul_add(v8::load(r.gu), v8::load(q), v);
      } else {
        for (Index j = 0; j < r.f; ++j) z += r.gu[j] * q[j];
      }
      r.logits[n0 + t] = z + v8::sum(v);
    }
  }
}

}  // namespace

void relu_tower_score_impl(const ReluTowerScoreRows& r) {
  switch (r.l2) {
    case 8:
      return score_tiles<1, 8>(r);
    case 16:
      return score_tiles<2, 6>(r);
    case 24:
      return score_tiles<3, 4>(r);
    default:
      return score_tiles<4, 3>(r);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace shoal::kernels {

HWY_EXPORT(relu_tower_score_impl);

bool relu_tower_score_supported(Index l1, Index l2, Index l3) {
  return l1 % 8 == 0 && l1 <= 64 && l3 == 8 && (l2 == 8 || l2 == 16 || l2 == 24 || l2 == 32);
}

void relu_tower_score(const ReluTowerScoreRows& r) {
  if (!relu_tower_score_supported(r.l1, r.l2, r.l3)) return relu_tower_score_ref(r);
  SHOAL_DISPATCH(relu_tower_score_impl)(r);
}

}  // namespace shoal::kernels
#endif  // HWY_ONCE
