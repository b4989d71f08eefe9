// The forward pass alone of the ReLU tower and product path of relu_tower.h, for one fixed
// first-layer part against a list of rows: NeuMF's recommendation scoring (models/ncf.h,
// score_user), one user against a list of items, forward only, in one pass per tile of rows with
// every activation in registers. Every SIMD target, float; the _ref twin runs the same rows in
// plain loops, for any widths.
//
// With the first layer factored, the user's part a = b1 + P_m[u]·W_uᵀ + c·W_cᵀ is formed once
// per user and each item's part proj_i[i] = Q_m[i]·W_iᵀ once per request, so a pair costs
//   h1 = relu(a + proj_i[i]),  h2 = relu(h1·W2ᵀ + b2),  h3 = relu(h2·W3ᵀ + b3),
//   z  = Σ_j gu[j]·Q_g[i, j] + h3·wp3ᵀ + bp
// where gu = P_g[u] ⊙ (the predict weight's GMF part): the layer-by-layer path made a pass and
// a narrow GEMM call per layer (16 and 8 outputs keep few FMA units busy).
#pragma once

#include <cstdint>

#include "shoal/core/tensor.h"

namespace shoal::kernels {

struct ReluTowerScoreRows {
  Index n = 0;                     // rows (pairs)
  const int32_t* items = nullptr;  // [n] item rows
  Index l1 = 0, l2 = 0, l3 = 0, f = 0;
  const float* a = nullptr;       // [l1]
  const float* proj_i = nullptr;  // [items, l1]
  const float* w2_t = nullptr;    // [l1, l2]: W2 transposed
  const float* b2 = nullptr;      // [l2]
  const float* w3_t = nullptr;    // [l2, l3]
  const float* b3 = nullptr;      // [l3]
  const float* gu = nullptr;      // [f] (f = 0: no GMF side)
  const float* qg = nullptr;      // [items, f]
  const float* wp3 = nullptr;     // [l3]
  float bp = 0;
  float* logits = nullptr;  // [n]
};

// Whether relu_tower_score has a vector kernel for these widths (else it runs the twin).
bool relu_tower_score_supported(Index l1, Index l2, Index l3);
void relu_tower_score(const ReluTowerScoreRows& r);
void relu_tower_score_ref(const ReluTowerScoreRows& r);

}  // namespace shoal::kernels
