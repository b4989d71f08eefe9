// Internal to src/shoal/kernels: a small AVX2/FMA register-blocked GEMM for the Linear backward,
// float only. Not a public header.
//
//   C[m, n] (+)= A(m × k) · B[k, n]      A(r, p) = a[r·a_rs + p·a_ks], B and C row-major
//
// A is read by scalar broadcasts with arbitrary strides, so a transposed A costs nothing:
//   dW = dzᵀ · x     A = dzᵀ (a_rs = 1, a_ks = ld), B = x block [rb, I],  k = rb
// (it also runs dx = dz · W with a_rs = ld, a_ks = 1, but libxsmm's NN kernel is faster there).
// The vector dimension is I and B is streamed row by row, so the TN product needs no packed
// or transposed operand at all. Per k step a 6 × 16 tile does 12 FMAs against 2 loads and 6
// broadcasts, which Zen 3's two FMA pipes and three load ports sustain. Column tails run on
// small zero-padded copies on the stack (never touching memory past n).
#pragma once

#if defined(__AVX2__) && defined(__FMA__)
#define SHOAL_HAVE_BCAST_GEMM 1

#include <immintrin.h>

#include "shoal/core/tensor.h"

namespace shoal::kernels::detail {

// C[MR, 8·NV] (+)= A(MR × k) · B[k, 8·NV]; every row of B and C has 8·NV valid columns. Masked
// loads or stores in here (for column tails) made gcc keep the accumulators in memory, storing
// all 12 every k step (58 vs 85+ GFLOP/s), so tails are padded by the caller instead.
template <int MR, int NV>
inline void bcast_tile(Index k, const float* a, Index a_rs, Index a_ks, const float* b, Index ldb,
                       float* c, Index ldc, bool load_c) {
  __m256 acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v)
      acc[r][v] = load_c ? _mm256_loadu_ps(c + r * ldc + 8 * v) : _mm256_setzero_ps();
  for (Index p = 0; p < k; ++p) {
    __m256 bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = _mm256_loadu_ps(b + 8 * v);
    for (int r = 0; r < MR; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * a_rs);
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
    a += a_ks;
    b += ldb;
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) _mm256_storeu_ps(c + r * ldc + 8 * v, acc[r][v]);
}

// Tile shapes, all with 12 accumulators (enough independent FMA chains to cover the 4-cycle
// latency on 2 pipes): 4 × 3 vectors, 6 × 2, 12 × 1. 6 × 2 leaves gcc a spare register so B
// stays in registers; 4 × 3 needs all 16 and gcc re-loads B per row (74 vs 90–95 GFLOP/s in
// L1); 12 × 1 needs a broadcast per FMA (~35%). So wide panels are 16 columns, and an odd
// vector count ends in one 24-column panel rather than an 8-column one.
inline Index max_tile_rows(Index padded_width) {
  return padded_width > 16 ? 4 : padded_width > 8 ? 6 : 12;
}

// A row tile of `rows` ≤ max_tile_rows(width) rows, width ∈ {8, 16, 24}.
template <int MR>
inline void bcast_row_tile(Index k, const float* a, Index a_rs, Index a_ks, const float* b,
                           Index ldb, float* c, Index ldc, bool load_c, Index width) {
  if constexpr (MR <= 4) {
    if (width == 24) return bcast_tile<MR, 3>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c);
  }
  if constexpr (MR <= 6) {
    if (width == 16) return bcast_tile<MR, 2>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c);
  }
  bcast_tile<MR, 1>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c);
}

inline void bcast_rows(Index rows, Index k, const float* a, Index a_rs, Index a_ks, const float* b,
                       Index ldb, float* c, Index ldc, bool load_c, Index width) {
  switch (rows) {
    case 12:
      return bcast_row_tile<12>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width);
    case 11:
      return bcast_row_tile<11>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width);
    case 10:
      return bcast_row_tile<10>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width);
    case 9:
      return bcast_row_tile<9>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width);
    case 8:
      return bcast_row_tile<8>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width);
    case 7:
      return bcast_row_tile<7>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width);
    case 6:
      return bcast_row_tile<6>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width);
    case 5:
      return bcast_row_tile<5>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width);
    case 4:
      return bcast_row_tile<4>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width);
    case 3:
      return bcast_row_tile<3>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width);
    case 2:
      return bcast_row_tile<2>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width);
    default:
      return bcast_row_tile<1>(k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width);
  }
}

// Rows [0, m) of a panel of width ∈ {8, 16, 24}, in tiles split evenly (m = 32 runs as
// 6,6,5,5,5,5, not 6,6,6,6,6,2: a 2-row tile has too few FMA chains to hide the latency).
inline void bcast_panel_rows(Index m, Index k, const float* a, Index a_rs, Index a_ks,
                             const float* b, Index ldb, float* c, Index ldc, bool load_c,
                             Index width) {
  const Index max_rows = max_tile_rows(width);
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

// Lanes [0, count) of a row segment, count ∈ [0, 8]; the rest read as 0 and are never stored.
inline __m256i lane_mask(Index count) {
  alignas(32) static const int32_t kLanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                 0,  0,  0,  0,  0,  0,  0,  0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLanes + 8 - count));
}

inline void copy_padded(const float* src, float* dst, Index width, Index padded) {
  for (Index j = 0; j < padded; j += 8) {
    const Index left = width - j;
    _mm256_store_ps(dst + j, left >= 8
                                 ? _mm256_loadu_ps(src + j)
                                 : _mm256_maskload_ps(src + j, lane_mask(left > 0 ? left : 0)));
  }
}

// A panel whose width is not a multiple of 8: B's columns are copied zero-padded (in chunks of
// kPackRows rows), and each C tile goes through a padded stack copy, with masked vector moves.
// The copies cost O(k·width + m·width) against m·k·width FMAs.
inline void bcast_panel_tail(Index m, Index k, const float* a, Index a_rs, Index a_ks,
                             const float* b, Index ldb, float* c, Index ldc, bool load_c,
                             Index width) {
  constexpr Index kPackRows = 128;
  const Index padded = (width + 7) / 8 * 8;
  const Index max_rows = max_tile_rows(padded);
  alignas(32) float pack[kPackRows * 24];
  alignas(32) float ctile[12 * 24];
  for (Index p0 = 0; p0 == 0 || p0 < k; p0 += kPackRows) {
    const Index kc = k - p0 < kPackRows ? k - p0 : kPackRows;
    for (Index p = 0; p < kc; ++p)
      copy_padded(b + (p0 + p) * ldb, pack + p * padded, width, padded);
    const bool acc_c = load_c || p0 > 0;
    for (Index i0 = 0; i0 < m; i0 += max_rows) {
      const Index rows = m - i0 < max_rows ? m - i0 : max_rows;
      float* ci = c + i0 * ldc;
      if (acc_c)
        for (Index r = 0; r < rows; ++r)
          copy_padded(ci + r * ldc, ctile + r * padded, width, padded);
      bcast_rows(rows, kc, a + i0 * a_rs + p0 * a_ks, a_rs, a_ks, pack, padded, ctile, padded,
                 acc_c, padded);
      for (Index r = 0; r < rows; ++r)
        for (Index j = 0; j < width; j += 8) {
          const __m256 v = _mm256_load_ps(ctile + r * padded + j);
          if (width - j >= 8)
            _mm256_storeu_ps(ci + r * ldc + j, v);
          else
            _mm256_maskstore_ps(ci + r * ldc + j, lane_mask(width - j), v);
        }
    }
  }
}

inline void bcast_panel(Index m, Index k, const float* a, Index a_rs, Index a_ks, const float* b,
                        Index ldb, float* c, Index ldc, bool load_c, Index width) {
  if (width % 8 == 0)
    bcast_panel_rows(m, k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width);
  else
    bcast_panel_tail(m, k, a, a_rs, a_ks, b, ldb, c, ldc, load_c, width);
}

// C[m, n] = A·B (load_c false: C is never read) or C += A·B (load_c true). k = 0 with
// load_c false writes zeros. Column panels are outermost, so a B panel [k, 16] stays in L1
// across all row tiles (measured no slower than row tiles outermost, also when C is large).
inline void bcast_gemm(Index m, Index n, Index k, const float* a, Index a_rs, Index a_ks,
                       const float* b, Index ldb, float* c, Index ldc, bool load_c) {
  constexpr Index kPanel = 16;
  const Index vecs = (n + 7) / 8;
  // 16-column panels up to n_pairs; with an odd vector count ≥ 3 the rest is one 24-column one.
  const Index n_pairs = vecs % 2 == 1 && vecs >= 3 ? kPanel * ((vecs - 3) / 2) : n;
  for (Index j0 = 0; j0 < n_pairs; j0 += kPanel)
    bcast_panel(m, k, a, a_rs, a_ks, b + j0, ldb, c + j0, ldc, load_c,
                n_pairs - j0 < kPanel ? n_pairs - j0 : kPanel);
  if (n_pairs < n)
    bcast_panel(m, k, a, a_rs, a_ks, b + n_pairs, ldb, c + n_pairs, ldc, load_c, n - n_pairs);
}

}  // namespace shoal::kernels::detail

#endif  // __AVX2__ && __FMA__
