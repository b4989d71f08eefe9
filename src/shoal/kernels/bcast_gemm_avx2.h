// Internal to src/shoal/kernels: a small AVX2/FMA register-blocked GEMM for the Linear backward,
// float only. Not a public header.
//
//   C[m, n] (+)= A(m × k) · B[k, n]      A(r, p) = a[r·a_rs + p·a_ks], B and C row-major
//
// A is read by scalar broadcasts with arbitrary strides, so a transposed A costs nothing:
//   dW = dzᵀ · x     A = dzᵀ (a_rs = 1, a_ks = ld), B = x block [rb, I],  k = rb
// (it also runs dx = dz · W with a_rs = ld, a_ks = 1, but libxsmm's NN kernel is faster there).
// The vector dimension is I and B is streamed row by row, so the TN product needs no packed
// or transposed operand at all. Per k step a 6 × 16 tile does 12
// FMAs against 2 loads and 6 broadcasts, which Zen 3's two FMA pipes and three load ports
// sustain. Column tails use masked loads/stores (never touching memory past n).
#pragma once

#if defined(__AVX2__) && defined(__FMA__)
#define SHOAL_HAVE_BCAST_GEMM 1

#include <immintrin.h>

#include "shoal/core/tensor.h"

namespace shoal::kernels::detail {

// Lane mask with the first `count` (0..8) lanes set.
inline __m256i tail_mask(Index count) {
  alignas(32) static const int32_t kLanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                 0,  0,  0,  0,  0,  0,  0,  0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLanes + 8 - count));
}

template <int MR, int NV, bool Tail>
inline void bcast_tile(Index k, const float* a, Index a_rs, Index a_ks, const float* b, Index ldb,
                       float* c, Index ldc, bool load_c, __m256i mask) {
  __m256 acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) {
      float* cp = c + r * ldc + 8 * v;
      if (!load_c)
        acc[r][v] = _mm256_setzero_ps();
      else if (Tail && v == NV - 1)
        acc[r][v] = _mm256_maskload_ps(cp, mask);
      else
        acc[r][v] = _mm256_loadu_ps(cp);
    }
  for (Index p = 0; p < k; ++p) {
    __m256 bv[NV];
    for (int v = 0; v < NV; ++v)
      bv[v] = (Tail && v == NV - 1) ? _mm256_maskload_ps(b + 8 * v, mask) : _mm256_loadu_ps(b + 8 * v);
    for (int r = 0; r < MR; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * a_rs);
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
    a += a_ks;
    b += ldb;
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) {
      float* cp = c + r * ldc + 8 * v;
      if (Tail && v == NV - 1)
        _mm256_maskstore_ps(cp, mask, acc[r][v]);
      else
        _mm256_storeu_ps(cp, acc[r][v]);
    }
}

// One row tile [MR, width], width ∈ [1, 16] (≤ 8 when MR > 6): one or two vectors, the last
// maybe partial.
template <int MR>
inline void bcast_row_tile(Index k, const float* a, Index a_rs, Index a_ks, const float* b,
                           Index ldb, float* c, Index ldc, bool load_c, Index width) {
  if constexpr (MR <= 6) {  // two vectors: at most 6 rows (12 accumulators)
    if (width == 16) {
      bcast_tile<MR, 2, false>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, _mm256_setzero_si256());
      return;
    }
    if (width > 8) {
      bcast_tile<MR, 2, true>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, tail_mask(width - 8));
      return;
    }
  }
  if (width == 8)
    bcast_tile<MR, 1, false>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, _mm256_setzero_si256());
  else
    bcast_tile<MR, 1, true>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, tail_mask(width));
}

// A row tile of rows ∈ [1, 6] (width > 8) or [1, 12] (width ≤ 8) of one column panel.
inline void bcast_rows(Index rows, Index k, const float* a, Index a_rs, Index a_ks, const float* b,
                       Index ldb, float* c, Index ldc, bool load_c, Index width) {
  switch (rows) {
    case 12: bcast_row_tile<12>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width); break;
    case 11: bcast_row_tile<11>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width); break;
    case 10: bcast_row_tile<10>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width); break;
    case 9: bcast_row_tile<9>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width); break;
    case 8: bcast_row_tile<8>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width); break;
    case 7: bcast_row_tile<7>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width); break;
    case 6: bcast_row_tile<6>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width); break;
    case 5: bcast_row_tile<5>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width); break;
    case 4: bcast_row_tile<4>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width); break;
    case 3: bcast_row_tile<3>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width); break;
    case 2: bcast_row_tile<2>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width); break;
    default: bcast_row_tile<1>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width); break;
  }
}

// Micro-tile: 6 rows × 2 vectors. 12 accumulators + 2 B vectors + 1 broadcast leave gcc a
// spare register, so B stays in registers (the 4 × 3 tile needs all 16 and gcc re-loads B
// for every row: 74 vs 90–95 GFLOP/s in L1, docs/kernels.md). A one-vector panel (the column
// tail) uses 12 × 1 tiles, so it still has 12 independent FMA chains.
constexpr Index kPanel = 16;

// Rows [0, m) of one column panel in tiles of at most max_rows, split evenly (m = 32 runs as
// 6,6,5,5,5,5, not 6,6,6,6,6,2: a 2-row tile has too few FMA chains to hide the latency).
inline void bcast_panel(Index m, Index k, const float* a, Index a_rs, Index a_ks, const float* b,
                        Index ldb, float* c, Index ldc, bool load_c, Index width) {
  const Index max_rows = width > 8 ? 6 : 12;
  const Index tiles = (m + max_rows - 1) / max_rows;
  if (tiles == 0) return;
  const Index base = m / tiles, extra = m % tiles;
  Index i0 = 0;
  for (Index t = 0; t < tiles; ++t) {
    const Index rows = base + (t < extra ? 1 : 0);
    bcast_rows(rows, k, a + i0 * a_rs, a_rs, a_ks, b, ldb, c + i0 * ldc, ldc, load_c, width);
    i0 += rows;
  }
}

// C[m, n] = A·B (load_c false: C is never read) or C += A·B (load_c true). k = 0 with
// load_c false writes zeros. Column panels are outermost, so a B panel [k, 16] stays in L1
// across all row tiles (measured no slower than row tiles outermost, also when C is large).
inline void bcast_gemm(Index m, Index n, Index k, const float* a, Index a_rs, Index a_ks,
                       const float* b, Index ldb, float* c, Index ldc, bool load_c) {
  for (Index j0 = 0; j0 < n; j0 += kPanel)
    bcast_panel(m, k, a, a_rs, a_ks, b + j0, ldb, c + j0, ldc, load_c,
                n - j0 < kPanel ? n - j0 : kPanel);
}

}  // namespace shoal::kernels::detail

#endif  // __AVX2__ && __FMA__
