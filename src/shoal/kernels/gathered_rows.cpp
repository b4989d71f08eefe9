#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/gathered_rows.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h
#include "vec8.h"  // per target

#include "dispatch.h"
#include "shoal/kernels/gathered_rows.h"

#include <algorithm>

#include "shoal/core/error.h"

// Panels of 8-float groups (vec8.h) on every target: one vector each on AVX2 and AVX-512 (its
// 256-bit form), two on SSE4 and NEON.
HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {
namespace {

using v8::F8;

// Every tile keeps 12 accumulators (or fewer in a tail): enough independent FMA chains for the
// 4-cycle latency on two pipes. NV vectors of outputs per row, MR rows.
template <int NV>
constexpr int tile_rows() {
  return (NV == 4 ? 3 : NV == 2 ? 6 : 12) / (v8::kParts == 2 && NV < 4 ? 2 : 1);
}

// Calls f.template operator()<R>(i0) for tiles [i0, i0 + R) covering [0, count), at most MR rows
// each and split evenly (32 as 6,6,5,5,5,5, not 6,6,6,6,6,2: a 2-row tile has too few FMA
// chains to cover the latency, and streams its operand like a full one).
template <int MR, int R = MR, class F>
inline void tile_call(Index rows, Index i0, F& f) {
  if constexpr (R > 1) {
    if (rows != R) return tile_call<MR, R - 1>(rows, i0, f);
  }
  f.template operator()<R>(i0);
}
template <int MR, class F>
inline void for_even_tiles(Index count, F&& f) {
  const Index tiles = (count + MR - 1) / MR;
  if (tiles == 0) return;
  const Index base = count / tiles, extra = count % tiles;
  Index i0 = 0;
  for (Index t = 0; t < tiles; ++t) {
    const Index rows = base + (t < extra ? 1 : 0);
    tile_call<MR>(rows, i0, f);
    i0 += rows;
  }
}

// proj[r, 8v..] = Σ_p x_r[p]·wt[p, 8v..] for the MR rows x_r of a tile, one panel of NV
// vectors: per p, NV loads of wt against MR broadcasts of the rows' elements, read in place.
template <int MR, int NV>
__attribute__((always_inline)) inline void project_tile(const float* const (&x)[MR], Index e,
                                                        const float* wt, Index l1, float* y) {
  F8 acc[MR][NV];
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = v8::zero();
  for (Index p = 0; p < e; ++p) {
    F8 b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) b[v] = v8::load(wt + p * l1 + 8 * v);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      const F8 a = v8::set(x[r][p]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = v8::mul_add(a, b[v], acc[r][v]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) v8::store(acc[r][v], y + r * l1 + 8 * v);
}

template <int NV>
void project_panel(const float* table, Index ld, const int32_t* list, Index m, Index e,
                   const float* wt, Index l1, float* proj, bool prefetch) {
  constexpr int kMr = tile_rows<NV>();
  for_even_tiles<kMr>(m, [&]<int R>(Index k0) {
    if (prefetch)
      for (Index r = k0 + 2 * kMr; r < std::min<Index>(k0 + 3 * kMr, m); ++r)
        for (Index p = 0; p < e; p += 16) __builtin_prefetch(table + list[r] * ld + p);
    const float* x[R];
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) x[r] = table + static_cast<Index>(list[k0 + r]) * ld;
    project_tile<R, NV>(x, e, wt, l1, proj + k0 * l1);
  });
}

// dw[j0 + i, 8v..] += Σ_{k<rows} dz[k, j0 + i]·x_k[8v..] for i < MR, one panel of NV vectors
// of the rows' elements (x_k = table row list[k], read in place).
template <int MR, int NV>
__attribute__((always_inline)) inline void grad_tile(const float* table, Index ld,
                                                     const int32_t* list, Index rows,
                                                     const float* dz, Index l1, float* dw,
                                                     Index ldw) {
  F8 acc[MR][NV];
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = v8::load(dw + i * ldw + 8 * v);
  for (Index k = 0; k < rows; ++k) {
    const float* x = table + static_cast<Index>(list[k]) * ld;
    F8 b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) b[v] = v8::load(x + 8 * v);
#pragma GCC unroll 12
    for (int i = 0; i < MR; ++i) {
      const F8 a = v8::set(dz[k * l1 + i]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = v8::mul_add(a, b[v], acc[i][v]);
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) v8::store(acc[i][v], dw + i * ldw + 8 * v);
}

// One panel of NV vectors of the rows' elements (offset p0) over all l1 rows of dw, for the
// block of `rows` table rows.
template <int NV>
void grad_panel(const float* table, Index ld, const int32_t* list, Index rows, Index p0,
                const float* dz, Index l1, float* dw, Index ldw) {
  for_even_tiles<tile_rows<NV>()>(l1, [&]<int R>(Index j0) {
    grad_tile<R, NV>(table + p0, ld, list, rows, dz + j0, l1, dw + j0 * ldw + p0, ldw);
  });
}

// Rows per block of the weight gradient: the block's table rows and dz rows stay in L1 while
// every tile of dw runs over them.
constexpr Index kGradRowBlock = 96;

}  // namespace

bool rows_kernels_supported_impl(Index e, Index l1) {
  return e > 0 && l1 > 0 && e % 8 == 0 && l1 % 8 == 0;
}

void project_rows_impl(const float* table, Index ld, const int32_t* list, Index m, Index e,
                       const float* wt, Index l1, float* proj, bool prefetch) {
  SHOAL_DCHECK(rows_kernels_supported(e, l1));
  Index j0 = 0;
  for (; j0 + 32 <= l1; j0 += 32)
    project_panel<4>(table, ld, list, m, e, wt + j0, l1, proj + j0, prefetch);
  if (j0 + 16 <= l1) {
    project_panel<2>(table, ld, list, m, e, wt + j0, l1, proj + j0, prefetch);
    j0 += 16;
  }
  if (j0 < l1) project_panel<1>(table, ld, list, m, e, wt + j0, l1, proj + j0, prefetch);
}

void rows_weight_grad_impl(const float* table, Index ld, const int32_t* list, Index m, Index e,
                           const float* dz, Index l1, float* dw, Index ldw, bool prefetch) {
  SHOAL_DCHECK(rows_kernels_supported(e, l1));
  for (Index k0 = 0; k0 < m; k0 += kGradRowBlock) {
    const Index rows = std::min(kGradRowBlock, m - k0);
    const int32_t* lb = list + k0;
    const float* db = dz + k0 * l1;
    if (prefetch)
      for (Index k = 0; k < rows; ++k)
        for (Index p = 0; p < e; p += 16) __builtin_prefetch(table + lb[k] * ld + p);
    // Panels of 16 elements (6 × 2 tiles): with 4 vectors per row (3 × 4 tiles) the loads of
    // B, addressed through the list, took the registers the forward's folded into its FMAs,
    // and gcc spilled an accumulator.
    Index p0 = 0;
    for (; p0 + 16 <= e; p0 += 16) grad_panel<2>(table, ld, lb, rows, p0, db, l1, dw, ldw);
    if (p0 < e) grad_panel<1>(table, ld, lb, rows, p0, db, l1, dw, ldw);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace shoal::kernels {

HWY_EXPORT(rows_kernels_supported_impl);
HWY_EXPORT(project_rows_impl);
HWY_EXPORT(rows_weight_grad_impl);

bool rows_kernels_supported(Index e, Index l1) {
  return SHOAL_DISPATCH(rows_kernels_supported_impl)(e, l1);
}

void project_rows(const float* table, Index ld, const int32_t* list, Index m, Index e,
                  const float* wt, Index l1, float* proj, bool prefetch) {
  SHOAL_DISPATCH(project_rows_impl)(table, ld, list, m, e, wt, l1, proj, prefetch);
}

void rows_weight_grad(const float* table, Index ld, const int32_t* list, Index m, Index e,
                      const float* dz, Index l1, float* dw, Index ldw, bool prefetch) {
  SHOAL_DISPATCH(rows_weight_grad_impl)(table, ld, list, m, e, dz, l1, dw, ldw, prefetch);
}

}  // namespace shoal::kernels
#endif  // HWY_ONCE
