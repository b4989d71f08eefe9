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
// broadcasts, which Zen 3's two FMA pipes and three load ports sustain. Column tails use masked
// loads and stores (never touching memory past n).
#pragma once

#if defined(__AVX2__) && defined(__FMA__)
#define SHOAL_HAVE_BCAST_GEMM 1

#include <immintrin.h>

#include "shoal/core/tensor.h"

namespace shoal::kernels::detail {

// Lanes [0, count) of a vector, count ∈ [1, 8].
inline __m256i lane_mask(Index count) {
  alignas(32) static const int32_t kLanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                 0,  0,  0,  0,  0,  0,  0,  0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLanes + 8 - count));
}

// What a tile does with C: overwrite it, accumulate into it, or overwrite it with
// bias[j] + (A·B)[i, j], optionally through ReLU (the Linear forward's epilogue, applied in
// registers instead of in a second pass over C).
enum class Epi : uint8_t { kStore, kAccumulate, kBias, kBiasRelu };

// C[MR, cols] (op)= A(MR × k) · B[k, cols], cols = 8·(NV − 1) + lanes of `mask` when kMask
// (the last vector of every B and C row is masked: never read or written past cols), else
// 8·NV. Every loop is fully unrolled and the flags are compile-time, so the 12 accumulators
// live in registers: with a runtime load_c flag, or a runtime A stride in some inlining
// contexts, gcc kept the acc array on the stack and stored all 12 every k step (37 vs
// 85+ GFLOP/s, docs/kernels.md).
template <int MR, int NV, Epi kEpi, bool kMask>
__attribute__((always_inline)) inline void bcast_tile_body(Index k, const float* a, Index a_rs,
                                                           Index a_ks, const float* b, Index ldb,
                                                           float* c, Index ldc, const float* bias,
                                                           __m256i mask) {
  auto load = [&](const float* p, int v) {
    return kMask && v == NV - 1 ? _mm256_maskload_ps(p, mask) : _mm256_loadu_ps(p);
  };
  __m256 acc[MR][NV];
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 3
    for (int v = 0; v < NV; ++v) {
      if constexpr (kEpi == Epi::kAccumulate)
        acc[r][v] = load(c + r * ldc + 8 * v, v);
      else if constexpr (kEpi == Epi::kBias || kEpi == Epi::kBiasRelu)
        acc[r][v] = load(bias + 8 * v, v);
      else
        acc[r][v] = _mm256_setzero_ps();
    }
  }
  for (Index p = 0; p < k; ++p) {
    __m256 bv[NV];
#pragma GCC unroll 3
    for (int v = 0; v < NV; ++v) bv[v] = load(b + 8 * v, v);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * a_rs);
#pragma GCC unroll 3
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
    a += a_ks;
    b += ldb;
  }
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 3
    for (int v = 0; v < NV; ++v) {
      __m256 out = acc[r][v];
      // max(x, +0) returns +0 for x ≤ 0 (and for -0), as relu's x > 0 ? x : 0.
      if constexpr (kEpi == Epi::kBiasRelu) out = _mm256_max_ps(out, _mm256_setzero_ps());
      if (kMask && v == NV - 1)
        _mm256_maskstore_ps(c + r * ldc + 8 * v, mask, out);
      else
        _mm256_storeu_ps(c + r * ldc + 8 * v, out);
    }
  }
}

template <int MR, int NV, Epi kEpi>
inline void bcast_tile_epi(Index k, const float* a, Index a_rs, Index a_ks, const float* b,
                           Index ldb, float* c, Index ldc, const float* bias, Index last_lanes) {
  if (last_lanes == 8) {
    if constexpr (kEpi == Epi::kStore || kEpi == Epi::kAccumulate) {
      // a_rs = 1 (dzᵀ or xᵀ as A, the dW cases) gets its own instance so the broadcasts
      // address a + r directly.
      if (a_rs == 1)
        return bcast_tile_body<MR, NV, kEpi, false>(k, a, 1, a_ks, b, ldb, c, ldc, bias,
                                                    _mm256_setzero_si256());
    }
    return bcast_tile_body<MR, NV, kEpi, false>(k, a, a_rs, a_ks, b, ldb, c, ldc, bias,
                                                _mm256_setzero_si256());
  }
  bcast_tile_body<MR, NV, kEpi, true>(k, a, a_rs, a_ks, b, ldb, c, ldc, bias,
                                      lane_mask(last_lanes));
}

// One tile; last_lanes ∈ [1, 8] valid lanes in the last vector.
template <int MR, int NV>
__attribute__((noinline)) void bcast_tile(Index k, const float* a, Index a_rs, Index a_ks,
                                          const float* b, Index ldb, float* c, Index ldc, Epi epi,
                                          const float* bias, Index last_lanes) {
  switch (epi) {
    case Epi::kStore:
      return bcast_tile_epi<MR, NV, Epi::kStore>(k, a, a_rs, a_ks, b, ldb, c, ldc, bias,
                                                 last_lanes);
    case Epi::kAccumulate:
      return bcast_tile_epi<MR, NV, Epi::kAccumulate>(k, a, a_rs, a_ks, b, ldb, c, ldc, bias,
                                                      last_lanes);
    case Epi::kBias:
      return bcast_tile_epi<MR, NV, Epi::kBias>(k, a, a_rs, a_ks, b, ldb, c, ldc, bias, last_lanes);
    case Epi::kBiasRelu:
      return bcast_tile_epi<MR, NV, Epi::kBiasRelu>(k, a, a_rs, a_ks, b, ldb, c, ldc, bias,
                                                    last_lanes);
  }
}

// Tile shapes, all with 12 accumulators (enough independent FMA chains to cover the 4-cycle
// latency on 2 pipes): 4 × 3 vectors, 6 × 2, 12 × 1. 12 × 1 needs a broadcast per FMA, so wide
// panels are 16 columns, and an odd vector count ends in one 24-column panel rather than an
// 8-column one.
inline Index max_tile_rows(Index vecs) {
  return vecs >= 3 ? 4 : vecs == 2 ? 6 : 12;
}

template <int MR>
inline void bcast_row_tile(Index k, const float* a, Index a_rs, Index a_ks, const float* b,
                           Index ldb, float* c, Index ldc, Epi epi, const float* bias, Index vecs,
                           Index last) {
  if constexpr (MR <= 4) {
    if (vecs == 3) return bcast_tile<MR, 3>(k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias, last);
  }
  if constexpr (MR <= 6) {
    if (vecs == 2) return bcast_tile<MR, 2>(k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias, last);
  }
  bcast_tile<MR, 1>(k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias, last);
}

inline void bcast_rows(Index rows, Index k, const float* a, Index a_rs, Index a_ks, const float* b,
                       Index ldb, float* c, Index ldc, Epi epi, const float* bias, Index vecs,
                       Index last) {
  switch (rows) {
    case 12:
      return bcast_row_tile<12>(k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias, vecs, last);
    case 11:
      return bcast_row_tile<11>(k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias, vecs, last);
    case 10:
      return bcast_row_tile<10>(k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias, vecs, last);
    case 9:
      return bcast_row_tile<9>(k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias, vecs, last);
    case 8:
      return bcast_row_tile<8>(k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias, vecs, last);
    case 7:
      return bcast_row_tile<7>(k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias, vecs, last);
    case 6:
      return bcast_row_tile<6>(k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias, vecs, last);
    case 5:
      return bcast_row_tile<5>(k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias, vecs, last);
    case 4:
      return bcast_row_tile<4>(k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias, vecs, last);
    case 3:
      return bcast_row_tile<3>(k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias, vecs, last);
    case 2:
      return bcast_row_tile<2>(k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias, vecs, last);
    default:
      return bcast_row_tile<1>(k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias, vecs, last);
  }
}

// Rows [0, m) of a panel of width ≤ 24, in tiles split evenly (m = 32 runs as 6,6,5,5,5,5, not
// 6,6,6,6,6,2: a 2-row tile has too few FMA chains to hide the latency). A width that is not a
// multiple of 8 masks its last vector (measured as fast as the zero-padded copies it replaced:
// 97 µs for dW at [1280, 85, 32] either way).
inline void bcast_panel(Index m, Index k, const float* a, Index a_rs, Index a_ks, const float* b,
                        Index ldb, float* c, Index ldc, Epi epi, const float* bias, Index width) {
  const Index vecs = (width + 7) / 8, last = width - 8 * (vecs - 1);
  const Index max_rows = max_tile_rows(vecs);
  const Index tiles = (m + max_rows - 1) / max_rows;
  if (tiles == 0) return;
  const Index base = m / tiles, extra = m % tiles;
  Index i0 = 0;
  for (Index t = 0; t < tiles; ++t) {
    const Index rows = base + (t < extra ? 1 : 0);
    bcast_rows(rows, k, a + i0 * a_rs, a_rs, a_ks, b, ldb, c + i0 * ldc, ldc, epi, bias, vecs,
               last);
    i0 += rows;
  }
}

// C[m, n] (op)= A·B per `epi`: kStore writes A·B (C is never read), kAccumulate adds it to C,
// kBias / kBiasRelu write bias[j] + (A·B)[i, j] (through ReLU). k = 0 with kStore writes zeros.
// Column panels are outermost, so a B panel [k, 16] stays in L1 across all row tiles (measured
// no slower than row tiles outermost, also when C is large).
inline void bcast_gemm(Index m, Index n, Index k, const float* a, Index a_rs, Index a_ks,
                       const float* b, Index ldb, float* c, Index ldc, Epi epi,
                       const float* bias = nullptr) {
  constexpr Index kPanel = 16;
  const Index vecs = (n + 7) / 8;
  // 16-column panels up to n_pairs; with an odd vector count ≥ 3 the rest is one 24-column one.
  const Index n_pairs = vecs % 2 == 1 && vecs >= 3 ? kPanel * ((vecs - 3) / 2) : n;
  for (Index j0 = 0; j0 < n_pairs; j0 += kPanel)
    bcast_panel(m, k, a, a_rs, a_ks, b + j0, ldb, c + j0, ldc, epi, bias ? bias + j0 : nullptr,
                n_pairs - j0 < kPanel ? n_pairs - j0 : kPanel);
  if (n_pairs < n)
    bcast_panel(m, k, a, a_rs, a_ks, b + n_pairs, ldb, c + n_pairs, ldc, epi,
                bias ? bias + n_pairs : nullptr, n - n_pairs);
}

// The common forms: C = A·B (load_c false) or C += A·B (load_c true).
inline void bcast_gemm(Index m, Index n, Index k, const float* a, Index a_rs, Index a_ks,
                       const float* b, Index ldb, float* c, Index ldc, bool load_c) {
  bcast_gemm(m, n, k, a, a_rs, a_ks, b, ldb, c, ldc, load_c ? Epi::kAccumulate : Epi::kStore);
}

}  // namespace shoal::kernels::detail

#endif  // __AVX2__ && __FMA__
