// The float Linear's SIMD pieces (linear_simd.h), compiled once per target: SSE4 (4 lanes),
// AVX2 (8) and AVX-512 (16); the widest the CPU runs is called.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/linear_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h

#include <cstddef>

#include "dispatch.h"
#include "linear_simd.h"
#include "shoal/kernels/activations.h"

HWY_BEFORE_NAMESPACE();
namespace shoal::kernels::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The GEMM on vectors of D: the target's full width when n fills whole vectors, else 8 lanes
// (on AVX-512 a masked 16-lane tail wastes more lanes than an 8-lane one: a [1280, 16, 8]
// Linear forward + backward took 22.6 µs against 16.3 µs on 8 lanes, DLinear's [36 → 18]
// layer ran 60% slower).
template <class D>
struct Bcast {
  using V = hn::Vec<D>;
  using M = hn::Mask<D>;
  static constexpr Index kL = static_cast<Index>(hn::MaxLanes(D()));

  // The first `count` lanes from p, zeros above, never reading past p + count. AVX2 and AVX-512
  // have fault-free masked loads; Highway's SSE4/SSSE3 MaskedLoad reads the whole vector (and
  // needs alignment), so the lanes are copied there.
  static HWY_INLINE V load_first(D d, const float* p, M mask, Index count) {
#if HWY_TARGET <= HWY_AVX2
    static_cast<void>(count);
    return hn::MaskedLoad(mask, d, p);
#else
    static_cast<void>(mask);
    alignas(64) float buf[kL] = {};
    for (Index i = 0; i < count; ++i) buf[i] = p[i];
    return hn::Load(d, buf);
#endif
  }

  template <int NV, bool kMask>
  static HWY_INLINE V load_vec(D d, const float* p, int v, M mask, Index count) {
    if (kMask && v == NV - 1) return load_first(d, p, mask, count);
    return hn::LoadU(d, p);
  }

  // C[MR, cols] (op)= A(MR × k) · B[k, cols], cols = kL·(NV − 1) + count when kMask (the last
  // vector of every B and C row is masked: never read or written past cols), else kL·NV. Every
  // loop is fully unrolled and the flags are compile-time, so the 12 accumulators live in
  // registers: with a runtime load_c flag, or a runtime A stride in some inlining contexts, gcc
  // kept the acc array on the stack and stored all 12 every k step (docs/kernels.md).
  template <int MR, int NV, Epi kEpi, bool kMask>
  static HWY_INLINE void tile_body(Index k, const float* a, Index a_rs, Index a_ks, const float* b,
                                   Index ldb, float* c, Index ldc, const float* bias, M mask,
                                   Index count) {
    const D d;
    V acc[MR][NV];
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 3
      for (int v = 0; v < NV; ++v) {
        if constexpr (kEpi == Epi::kAccumulate)
          acc[r][v] = load_vec<NV, kMask>(d, c + r * ldc + kL * v, v, mask, count);
        else if constexpr (kEpi == Epi::kBias || kEpi == Epi::kBiasRelu)
          acc[r][v] = load_vec<NV, kMask>(d, bias + kL * v, v, mask, count);
        else
          acc[r][v] = hn::Zero(d);
      }
    }
    for (Index p = 0; p < k; ++p) {
      V bv[NV];
#pragma GCC unroll 3
      for (int v = 0; v < NV; ++v) bv[v] = load_vec<NV, kMask>(d, b + kL * v, v, mask, count);
#pragma GCC unroll 12
      for (int r = 0; r < MR; ++r) {
        const V av = hn::Set(d, a[r * a_rs]);
#pragma GCC unroll 3
        for (int v = 0; v < NV; ++v) acc[r][v] = hn::MulAdd(av, bv[v], acc[r][v]);
      }
      a += a_ks;
      b += ldb;
    }
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 3
      for (int v = 0; v < NV; ++v) {
        V out = acc[r][v];
        if constexpr (kEpi == Epi::kBiasRelu) out = hn::Max(out, hn::Zero(d));
        if (kMask && v == NV - 1)
          hn::BlendedStore(out, mask, d, c + r * ldc + kL * v);
        else
          hn::StoreU(out, d, c + r * ldc + kL * v);
      }
    }
  }

  template <int MR, int NV, Epi kEpi>
  static HWY_INLINE void tile_epi(Index k, const float* a, Index a_rs, Index a_ks, const float* b,
                                  Index ldb, float* c, Index ldc, const float* bias, Index last) {
    const D d;
    if (last == kL) {
      if constexpr (kEpi == Epi::kStore || kEpi == Epi::kAccumulate) {
        // a_rs = 1 (dzᵀ or xᵀ as A, the dW cases) gets its own instance so the broadcasts
        // address a + r directly.
        if (a_rs == 1)
          return tile_body<MR, NV, kEpi, false>(k, a, 1, a_ks, b, ldb, c, ldc, bias,
                                                hn::FirstN(d, 0), kL);
      }
      return tile_body<MR, NV, kEpi, false>(k, a, a_rs, a_ks, b, ldb, c, ldc, bias,
                                            hn::FirstN(d, 0), kL);
    }
    tile_body<MR, NV, kEpi, true>(k, a, a_rs, a_ks, b, ldb, c, ldc, bias,
                                  hn::FirstN(d, static_cast<size_t>(last)), last);
  }

  // One tile; last ∈ [1, kL] valid lanes in the last vector.
  template <int MR, int NV>
  static HWY_NOINLINE void tile(Index k, const float* a, Index a_rs, Index a_ks, const float* b,
                                Index ldb, float* c, Index ldc, Epi epi, const float* bias,
                                Index last) {
    switch (epi) {
      case Epi::kStore:
        return tile_epi<MR, NV, Epi::kStore>(k, a, a_rs, a_ks, b, ldb, c, ldc, bias, last);
      case Epi::kAccumulate:
        return tile_epi<MR, NV, Epi::kAccumulate>(k, a, a_rs, a_ks, b, ldb, c, ldc, bias, last);
      case Epi::kBias:
        return tile_epi<MR, NV, Epi::kBias>(k, a, a_rs, a_ks, b, ldb, c, ldc, bias, last);
      case Epi::kBiasRelu:
        return tile_epi<MR, NV, Epi::kBiasRelu>(k, a, a_rs, a_ks, b, ldb, c, ldc, bias, last);
    }
  }

  // Tile shapes, all with 12 accumulators (enough independent FMA chains to cover the 4-cycle
  // latency on 2 pipes): 4 × 3 vectors, 6 × 2, 12 × 1. 12 × 1 needs a broadcast per FMA, so wide
  // panels are 2 vectors, and an odd vector count ends in one 3-vector panel rather than a
  // 1-vector one.
  static Index max_tile_rows(Index vecs) {
    return vecs >= 3 ? 4 : vecs == 2 ? 6 : 12;
  }

  template <int MR>
  static HWY_INLINE void row_tile(Index k, const float* a, Index a_rs, Index a_ks, const float* b,
                                  Index ldb, float* c, Index ldc, Epi epi, const float* bias,
                                  Index vecs, Index last) {
    if constexpr (MR <= 4) {
      if (vecs == 3) return tile<MR, 3>(k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias, last);
    }
    if constexpr (MR <= 6) {
      if (vecs == 2) return tile<MR, 2>(k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias, last);
    }
    tile<MR, 1>(k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias, last);
  }

  template <int... kRows>
  static HWY_INLINE void rows_tile(std::integer_sequence<int, kRows...>, Index rows, Index k,
                                   const float* a, Index a_rs, Index a_ks, const float* b,
                                   Index ldb, float* c, Index ldc, Epi epi, const float* bias,
                                   Index vecs, Index last) {
    // rows ∈ [1, 12]: the one instance whose height matches.
    static_cast<void>(
        ((rows == kRows + 1
              ? (row_tile<kRows + 1>(k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias, vecs, last), true)
              : false) ||
         ...));
  }

  // Rows [0, m) of a panel of at most 3 vectors, in tiles split evenly (m = 32 runs as
  // 6,6,5,5,5,5, not 6,6,6,6,6,2: a 2-row tile has too few FMA chains to hide the latency).
  static HWY_INLINE void panel(Index m, Index k, const float* a, Index a_rs, Index a_ks,
                               const float* b, Index ldb, float* c, Index ldc, Epi epi,
                               const float* bias, Index width) {
    const Index vecs = (width + kL - 1) / kL, last = width - kL * (vecs - 1);
    const Index max_rows = max_tile_rows(vecs);
    const Index tiles = (m + max_rows - 1) / max_rows;
    if (tiles == 0) return;
    const Index base = m / tiles, extra = m % tiles;
    Index i0 = 0;
    for (Index t = 0; t < tiles; ++t) {
      const Index rows = base + (t < extra ? 1 : 0);
      rows_tile(std::make_integer_sequence<int, 12>{}, rows, k, a + i0 * a_rs, a_rs, a_ks, b, ldb,
                c + i0 * ldc, ldc, epi, bias, vecs, last);
      i0 += rows;
    }
  }

  // Column panels are outermost, so a B panel [k, 2 vectors] stays in L1 across all row tiles.
  static void run(Index m, Index n, Index k, const float* a, Index a_rs, Index a_ks, const float* b,
                  Index ldb, float* c, Index ldc, Epi epi, const float* bias) {
    constexpr Index kPanel = 2 * kL;
    const Index vecs = (n + kL - 1) / kL;
    // 2-vector panels up to n_pairs; with an odd vector count ≥ 3 the rest is one 3-vector one.
    const Index n_pairs = vecs % 2 == 1 && vecs >= 3 ? kPanel * ((vecs - 3) / 2) : n;
    for (Index j0 = 0; j0 < n_pairs; j0 += kPanel)
      panel(m, k, a, a_rs, a_ks, b + j0, ldb, c + j0, ldc, epi, bias ? bias + j0 : nullptr,
            n_pairs - j0 < kPanel ? n_pairs - j0 : kPanel);
    if (n_pairs < n)
      panel(m, k, a, a_rs, a_ks, b + n_pairs, ldb, c + n_pairs, ldc, epi,
            bias ? bias + n_pairs : nullptr, n - n_pairs);
  }
};

void bcast_gemm_impl(Index m, Index n, Index k, const float* a, Index a_rs, Index a_ks,
                     const float* b, Index ldb, float* c, Index ldc, Epi epi, const float* bias) {
  if (HWY_LANES(float) > 8 && n % HWY_LANES(float) != 0)
    return Bcast<hn::CappedTag<float, 8>>::run(m, n, k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias);
  Bcast<hn::ScalableTag<float>>::run(m, n, k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias);
}

// ReLU is a compare and a select per vector of (at most) 8 lanes, so that O = 8 does not fall to
// the scalar tail on AVX-512; GELU evaluates erf/exp per element.
void linear_backward_prologue_impl(Act act, ConstMat<float> dy, ConstMat<float> saved, float* dz,
                                   float* __restrict col_sum) {
  const hn::CappedTag<float, 8> d;
  constexpr Index kL = static_cast<Index>(hn::MaxLanes(decltype(d)()));
  const Index rows = dy.rows, cols = dy.cols, cv = cols / kL * kL;
  for (Index i = 0; i < rows; ++i) {
    const float* __restrict dyi = dy.row(i);
    float* __restrict dzi = dz + i * cols;
    if (act == Act::kRelu) {
      const float* __restrict si = saved.row(i);
      Index j = 0;
      for (; j < cv; j += kL) {
        const auto keep = hn::Gt(hn::LoadU(d, si + j), hn::Zero(d));
        hn::StoreU(hn::IfThenElseZero(keep, hn::LoadU(d, dyi + j)), d, dzi + j);
      }
      for (; j < cols; ++j) dzi[j] = si[j] > 0.0f ? dyi[j] : 0.0f;
    } else if (act == Act::kGelu) {
      const float* __restrict si = saved.row(i);
      for (Index j = 0; j < cols; ++j) dzi[j] = dyi[j] * gelu_derivative(si[j]);
    }
    if (col_sum) {
      const float* __restrict src = act == Act::kNone ? dyi : dzi;
      for (Index j = 0; j < cols; ++j) col_sum[j] += src[j];
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace shoal::kernels::detail {

HWY_EXPORT(bcast_gemm_impl);
HWY_EXPORT(linear_backward_prologue_impl);

void bcast_gemm(Index m, Index n, Index k, const float* a, Index a_rs, Index a_ks, const float* b,
                Index ldb, float* c, Index ldc, Epi epi, const float* bias) {
  SHOAL_DISPATCH(bcast_gemm_impl)(m, n, k, a, a_rs, a_ks, b, ldb, c, ldc, epi, bias);
}

void linear_backward_prologue(Act act, ConstMat<float> dy, ConstMat<float> saved, float* dz,
                              float* col_sum) {
  SHOAL_DISPATCH(linear_backward_prologue_impl)(act, dy, saved, dz, col_sum);
}

}  // namespace shoal::kernels::detail
#endif
