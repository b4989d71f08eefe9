#include <vector>

#include "shoal/kernels/bce.h"
#include "shoal/kernels/relu_tower.h"

namespace shoal::kernels {

// Row by row: the forward and loss, then the row's backward into the gradients and the
// scratch's d1, d2, d3; the weight gradients over the rows at the end, in row order.
double relu_tower_chunk_ref(Index l1, Index l2, Index l3, Index f, const ReluTowerChunk& a) {
  std::vector<float> h3(static_cast<size_t>(l3)), g(static_cast<size_t>(f));
  double loss = 0;
  for (Index r = 0; r < a.n; ++r) {
    const Index u = a.users[r], i = a.items[r];
    const Index su = a.slot_u[u], si = a.slot_i[i];
    const float* c = a.ctx + r * a.ld_ctx;
    float* h1 = a.h1 + r * l1;
    float* h2 = a.h2 + r * l2;
    for (Index j = 0; j < l1; ++j) {
      float v = a.b1[j] + a.proj_u[su * l1 + j] + a.proj_i[si * l1 + j];
      for (Index k = 0; k < a.c; ++k) v += c[k] * a.wc_t[k * l1 + j];
      h1[j] = v > 0.0f ? v : 0.0f;
    }
    for (Index o = 0; o < l2; ++o) {
      float v = a.b2[o];
      for (Index j = 0; j < l1; ++j) v += h1[j] * a.w2[o * l1 + j];
      h2[o] = v > 0.0f ? v : 0.0f;
    }
    for (Index o = 0; o < l3; ++o) {
      float v = a.b3[o];
      for (Index j = 0; j < l2; ++j) v += h2[j] * a.w3[o * l2 + j];
      h3[static_cast<size_t>(o)] = v > 0.0f ? v : 0.0f;
    }
    float z = a.bp;
    for (Index j = 0; j < f; ++j) {
      g[static_cast<size_t>(j)] = a.pg[u * f + j] * a.qg[i * f + j];
      z += g[static_cast<size_t>(j)] * a.wp[j];
    }
    for (Index j = 0; j < l3; ++j) z += h3[static_cast<size_t>(j)] * a.wp[f + j];
    if (a.logits != nullptr) a.logits[r] = z;
    float dz = 0;
    loss += bce_logits_ref(&z, a.labels + r, &dz, 1, a.scale);
    // Backward: predict, GMF, then the tower top down with its biases.
    *a.dbp += dz;
    for (Index j = 0; j < f; ++j) a.dwp[j] += dz * g[static_cast<size_t>(j)];
    for (Index j = 0; j < l3; ++j) a.dwp[f + j] += dz * h3[static_cast<size_t>(j)];
    for (Index j = 0; j < f; ++j) {
      const float dg = dz * a.wp[j];
      a.gpg[su * f + j] += dg * a.qg[i * f + j];
      a.gqg[si * f + j] += dg * a.pg[u * f + j];
    }
    float* d3 = a.d3 + r * l3;
    float* d2 = a.d2 + r * l2;
    float* d1 = a.d1 + r * l1;
    for (Index o = 0; o < l3; ++o) {
      d3[o] = h3[static_cast<size_t>(o)] > 0.0f ? dz * a.wp[f + o] : 0.0f;
      a.db3[o] += d3[o];
    }
    for (Index j = 0; j < l2; ++j) {
      float v = 0;
      for (Index o = 0; o < l3; ++o) v += d3[o] * a.w3[o * l2 + j];
      d2[j] = h2[j] > 0.0f ? v : 0.0f;
      a.db2[j] += d2[j];
    }
    for (Index j = 0; j < l1; ++j) {
      float v = 0;
      for (Index o = 0; o < l2; ++o) v += d2[o] * a.w2[o * l1 + j];
      d1[j] = h1[j] > 0.0f ? v : 0.0f;
      a.db1[j] += d1[j];
      a.dz_u[su * l1 + j] += d1[j];
      a.dz_i[si * l1 + j] += d1[j];
    }
  }
  for (Index r = 0; r < a.n; ++r) {
    const float* c = a.ctx + r * a.ld_ctx;
    for (Index k = 0; k < a.c; ++k)
      for (Index j = 0; j < l1; ++j) a.dwc_t[k * l1 + j] += c[k] * a.d1[r * l1 + j];
    for (Index o = 0; o < l2; ++o)
      for (Index j = 0; j < l1; ++j) a.dw2[o * l1 + j] += a.d2[r * l2 + o] * a.h1[r * l1 + j];
    for (Index o = 0; o < l3; ++o)
      for (Index j = 0; j < l2; ++j) a.dw3[o * l2 + j] += a.d3[r * l3 + o] * a.h2[r * l2 + j];
  }
  return loss;
}

}  // namespace shoal::kernels
