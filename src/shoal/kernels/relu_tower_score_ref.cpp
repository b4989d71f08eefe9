#include <algorithm>
#include <vector>

#include "shoal/kernels/relu_tower_score.h"

namespace shoal::kernels {

void relu_tower_score_ref(const ReluTowerScoreRows& r) {
  std::vector<float> h1(static_cast<size_t>(r.l1)), h2(static_cast<size_t>(r.l2));
  for (Index n = 0; n < r.n; ++n) {
    const Index i = r.items[n];
    for (Index j = 0; j < r.l1; ++j)
      h1[size_t(j)] = std::max(0.0f, r.a[j] + r.proj_i[i * r.l1 + j]);
    for (Index o = 0; o < r.l2; ++o) {
      float z = r.b2[o];
      for (Index k = 0; k < r.l1; ++k) z += h1[size_t(k)] * r.w2_t[k * r.l2 + o];
      h2[size_t(o)] = std::max(0.0f, z);
    }
    float z = r.bp;
    for (Index j = 0; j < r.f; ++j) z += r.gu[j] * r.qg[i * r.f + j];
    for (Index o = 0; o < r.l3; ++o) {
      float y = r.b3[o];
      for (Index k = 0; k < r.l2; ++k) y += h2[size_t(k)] * r.w3_t[k * r.l3 + o];
      z += std::max(0.0f, y) * r.wp3[o];
    }
    r.logits[n] = z;
  }
}

}  // namespace shoal::kernels
