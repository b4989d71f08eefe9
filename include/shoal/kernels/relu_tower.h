// A three-layer ReLU tower beside an elementwise-product path, summed into one logit and scored
// by BCE-with-logits: one training chunk of it in a single pass over tiles of rows. NeuMF with
// its factored first layer (models/ncf.h) is this shape; the pass runs
// over tiles of rows (forward, BCE-with-logits as bce.h, backward), every SIMD target, float; the
// _ref twin runs the same chunk row by row in plain loops, for any widths.
//
// Layer by layer, a chunk's tower made some twenty kernel calls and as many passes over its
// activations (GEMMs through libxsmm, then the bias/ReLU, the proj adds, the masks, the GMF
// product, the predict dot, the loss), each too narrow (16, 8, 1 outputs) to keep the FMA
// units busy. Here a tile's activations stay in L1 from the first layer's input to its
// gradient; every product is a register-blocked broadcast-FMA loop. The tiles keep their
// activations and gradients in chunk-sized scratch, and the weight gradients
// dW[o, :] += Σ_r dz[r, o]·x[r, :] run once per chunk over all its rows: accumulated per
// 6-row tile, each block of dW was loaded and stored for 6 rows of FMAs.
//
// Model (see models/ncf.h): h1 = relu(c·W_cᵀ + b1 + proj_u[u] + proj_i[i]),
// h2 = relu(h1·W2ᵀ + b2), h3 = relu(h2·W3ᵀ + b3), g = P_g[u] ⊙ Q_g[i],
// z = [g, h3]·w_pᵀ + b_p, loss = BCE-with-logits(z, y), dz = scale·(σ(z) − y).
// Supported widths: (L1, L2, L3, F) with relu_tower_supported() true; anything else runs the
// layer-by-layer path.
#pragma once

#include <cstdint>

#include "shoal/core/tensor.h"

namespace shoal::kernels {

// Rows per tile of the fused pass.
inline constexpr Index kReluTowerTileRows = 6;
// Rows a chunk of n rows reads: whole tiles.
inline constexpr Index relu_tower_padded_rows(Index n) {
  return (n + kReluTowerTileRows - 1) / kReluTowerTileRows * kReluTowerTileRows;
}

struct ReluTowerChunk {
  Index n = 0;  // rows
  Index c = 0;  // context columns
  // Context rows [n, c] with row stride ld_ctx, readable up to relu_tower_padded_rows(n) rows (the
  // tail tile reads its padding rows; their gradients are zero).
  const float* ctx = nullptr;
  Index ld_ctx = 0;
  const int32_t* users = nullptr;  // [n]
  const int32_t* items = nullptr;  // [n]
  // The first layer: the distinct rows' projections (row slot[id]) and the context columns'
  // weight transposed, [c, L1].
  const float* proj_u = nullptr;
  const int32_t* slot_u = nullptr;
  const float* proj_i = nullptr;
  const int32_t* slot_i = nullptr;
  const float* wc_t = nullptr;
  const float* b1 = nullptr;
  const float* w2 = nullptr;    // [L2, L1]
  const float* w2_t = nullptr;  // [L1, L2]
  const float* b2 = nullptr;
  const float* w3 = nullptr;    // [L3, L2]
  const float* w3_t = nullptr;  // [L2, L3]
  const float* b3 = nullptr;
  const float* pg = nullptr;  // GMF tables [users, F], [items, F]
  const float* qg = nullptr;
  const float* wp = nullptr;  // [F + L3]
  float bp = 0;
  const float* labels = nullptr;  // [n]
  float scale = 1;                // dz = scale·(σ(z) − y)
  // Gradients, accumulated: the context columns' dW transposed [c, L1], the dense params,
  // and per distinct row of the share (row slot_u[id] / slot_i[id]) the GMF tables' row grads
  // [slots, F] and the first layer's dz [slots, L1].
  float* dwc_t = nullptr;
  float* db1 = nullptr;
  float* dw2 = nullptr;
  float* db2 = nullptr;
  float* dw3 = nullptr;
  float* db3 = nullptr;
  float* dwp = nullptr;
  float* dbp = nullptr;
  float* gpg = nullptr;
  float* gqg = nullptr;
  float* dz_u = nullptr;
  float* dz_i = nullptr;
  float* logits = nullptr;  // [n], optional
  // Scratch, [relu_tower_padded_rows(n), width] each, 32-byte aligned: the tiles' activations h1,
  // h2 and the gradients d1, d2, d3 of the three layers' pre-activations, which the chunk's
  // weight gradients read after the last tile.
  float* h1 = nullptr;
  float* h2 = nullptr;
  float* d1 = nullptr;
  float* d2 = nullptr;
  float* d3 = nullptr;
};

// Whether relu_tower_chunk has a kernel for these widths.
bool relu_tower_supported(Index l1, Index l2, Index l3, Index f);
// Runs the chunk; returns Σ_n loss_n (in double, in row order). Requires relu_tower_supported.
double relu_tower_chunk(Index l1, Index l2, Index l3, Index f, const ReluTowerChunk& a);
// The same chunk in plain loops (any widths; the loss by bce_logits_ref): other rounding. It
// writes the scratch's rows [0, n) and reads no padding row.
double relu_tower_chunk_ref(Index l1, Index l2, Index l3, Index f, const ReluTowerChunk& a);

}  // namespace shoal::kernels
