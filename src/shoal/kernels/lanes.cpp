// Lane-interleaved Linear kernels (lanes.h). Every product of the Linear is one strided loop
// nest over groups of 8 floats,
//   C(r, c) (op)= Σ_p A(r, p) · B(c, p)
// with A, B and C addressed by group strides, so x·Wᵀ, dz·W and dzᵀ·x are the same kernel with
// other strides and no operand is ever transposed or packed. A tile keeps MR × NR accumulators
// (one vector each, i.e. one scalar of each of the 8 models) and per p step loads MR + NR
// vectors for MR·NR FMAs: 4 × 3 normally (7 loads, 12 FMAs), 6 × 2 or 12 × 1 when the narrow
// dimension is 2 or 1, so even a width-1 output layer keeps 12 independent FMA chains.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/lanes.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h
#include "vec8.h"  // per target

#include "dispatch.h"
#include "shoal/kernels/lanes.h"

#include <algorithm>
#include <utility>

// A group of 8 models is one 8-float group of vec8.h: one vector on AVX2 and AVX-512 (its
// 256-bit form: the layout has no 16-float unit), two on SSE4 and NEON.
HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {
namespace {

using v8::F8;

enum class Epi : uint8_t { kStore, kAccumulate, kBias, kBiasRelu, kRelu };

struct Operands {
  const float* a;
  Index a_rs, a_ps;  // group strides of A(r, p)
  const float* b;
  Index b_cs, b_ps;  // group strides of B(c, p)
  float* c;
  Index c_rs, c_cs;   // group strides of C(r, c)
  const float* bias;  // per column c, group stride 1 (kBias, kBiasRelu)
  Index k;
};

// One MR × NR tile at rows r0.., columns c0... Compile-time sizes and epilogue keep the
// accumulators in registers (see docs/kernels.md, Codegen, for what a runtime flag costs).
template <int MR, int NR, Epi kEpi>
__attribute__((always_inline)) inline void tile(const Operands& op, Index r0, Index c0) {
  F8 acc[MR][NR];
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 3
    for (int c = 0; c < NR; ++c) {
      float* cp = op.c + ((r0 + r) * op.c_rs + (c0 + c) * op.c_cs) * kLanes;
      if constexpr (kEpi == Epi::kAccumulate)
        acc[r][c] = v8::load(cp);
      else if constexpr (kEpi == Epi::kBias || kEpi == Epi::kBiasRelu)
        acc[r][c] = v8::load(op.bias + (c0 + c) * kLanes);
      else
        acc[r][c] = v8::zero();
    }
  }
  const float* a = op.a + r0 * op.a_rs * kLanes;
  const float* b = op.b + c0 * op.b_cs * kLanes;
  const Index a_rs = op.a_rs * kLanes, a_ps = op.a_ps * kLanes;
  const Index b_cs = op.b_cs * kLanes, b_ps = op.b_ps * kLanes;
  for (Index p = 0; p < op.k; ++p) {
    F8 bv[NR];
#pragma GCC unroll 3
    for (int c = 0; c < NR; ++c) {
      bv[c] = v8::load(b + c * b_cs);
      // Pinned in a register: otherwise gcc folds a load of B into every FMA (MR loads per
      // vector instead of one) and the tile runs at the load ports' pace.
      v8::pin(bv[c]);
    }
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      F8 av = v8::load(a + r * a_rs);
      if constexpr (NR > 1) v8::pin(av);
#pragma GCC unroll 3
      for (int c = 0; c < NR; ++c) acc[r][c] = v8::mul_add(av, bv[c], acc[r][c]);
    }
    a += a_ps;
    b += b_ps;
  }
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 3
    for (int c = 0; c < NR; ++c) {
      F8 v = acc[r][c];
      if constexpr (kEpi == Epi::kBiasRelu || kEpi == Epi::kRelu) v = v8::relu(v);
      v8::store(v, op.c + ((r0 + r) * op.c_rs + (c0 + c) * op.c_cs) * kLanes);
    }
  }
}

// Rows [r0, m) of one column panel: tiles of MR rows, then the rest in tiles of 4, 2 and 1.
template <int MR, int NR, Epi kEpi>
void panel(const Operands& op, Index m, Index c0) {
  Index r = 0;
  for (; r + MR <= m; r += MR) tile<MR, NR, kEpi>(op, r, c0);
  if constexpr (MR > 4)
    for (; r + 4 <= m; r += 4) tile<4, NR, kEpi>(op, r, c0);
  if constexpr (MR > 2)
    for (; r + 2 <= m; r += 2) tile<2, NR, kEpi>(op, r, c0);
  for (; r < m; ++r) tile<1, NR, kEpi>(op, r, c0);
}

// Tile rows for 3, 2 and 1 columns: 12 accumulator vectors, half as many groups where a group
// takes two vectors (SSE4's 16 registers would spill 24).
constexpr int kMr3 = 4 / v8::kParts, kMr2 = 6 / v8::kParts, kMr1 = 12 / v8::kParts;

template <Epi kEpi>
void lane_gemm(Operands op, Index m, Index n) {
  if (m == 0 || n == 0) return;
  // Without a per-column epilogue the problem can be transposed (C(r, c) = Cᵀ(c, r)): keep the
  // longer dimension as rows, so a 1-row product (dW of a width-1 output layer) becomes 12 × 1
  // tiles instead of 1 × 3 ones with 3 FMA chains.
  if constexpr (kEpi == Epi::kStore || kEpi == Epi::kAccumulate) {
    if (m < n) {
      std::swap(op.a, op.b);
      std::swap(op.a_rs, op.b_cs);
      std::swap(op.a_ps, op.b_ps);
      std::swap(op.c_rs, op.c_cs);
      std::swap(m, n);
    }
  }
  if (n == 1) {
    panel<kMr1, 1, kEpi>(op, m, 0);
    return;
  }
  if (n == 2) {
    panel<kMr2, 2, kEpi>(op, m, 0);
    return;
  }
  Index c = 0;
  for (; c + 3 <= n; c += 3) panel<kMr3, 3, kEpi>(op, m, c);
  if (n - c == 2) panel<kMr2, 2, kEpi>(op, m, c);
  if (n - c == 1) panel<kMr1, 1, kEpi>(op, m, c);
}

}  // namespace

void lanes_pack_impl(std::span<const ConstMat<float>> src, float* dst) {
  lanes_check_pack(src);
  if (static_cast<Index>(src.size()) != kLanes) {
    lanes_pack_ref(src, dst);
    return;
  }
  const Index rows = src[0].rows, cols = src[0].cols;
  for (Index r = 0; r < rows; ++r) {
    Index c = 0;
    // 8 consecutive columns of the 8 sources are an 8 × 8 block; its transpose is 8 groups.
    for (; c + 8 <= cols; c += 8) {
      F8 v[8], t[8];
      for (int l = 0; l < 8; ++l) v[l] = v8::load(src[static_cast<size_t>(l)].row(r) + c);
      v8::transpose8(v, t);
      float* g = dst + (r * cols + c) * kLanes;
      for (int j = 0; j < 8; ++j) v8::store(t[j], g + j * kLanes);
    }
    for (; c < cols; ++c)
      for (Index l = 0; l < kLanes; ++l)
        dst[(r * cols + c) * kLanes + l] = src[static_cast<size_t>(l)](r, c);
  }
}

void lanes_linear_forward_impl(const float* x, const float* w, const float* b, Index n, Index i,
                               Index o, bool relu, float* y) {
  const Operands op{x, i, 1, w, i, 1, y, o, 1, b, i};
  if (b != nullptr)
    relu ? lane_gemm<Epi::kBiasRelu>(op, n, o) : lane_gemm<Epi::kBias>(op, n, o);
  else
    relu ? lane_gemm<Epi::kRelu>(op, n, o) : lane_gemm<Epi::kStore>(op, n, o);
}

void lanes_linear_dx_impl(const float* dz, const float* w, Index n, Index i, Index o, float* dx) {
  lane_gemm<Epi::kStore>({dz, o, 1, w, 1, i, dx, i, 1, nullptr, o}, n, i);
}

void lanes_linear_dw_impl(const float* dz, const float* x, Index n, Index i, Index o, float* dw,
                          bool accumulate) {
  const Operands op{dz, 1, o, x, 1, i, dw, i, 1, nullptr, n};
  accumulate ? lane_gemm<Epi::kAccumulate>(op, o, i) : lane_gemm<Epi::kStore>(op, o, i);
}

void lanes_bias_grad_impl(const float* dz, Index n, Index o, float* db, bool accumulate) {
  for (Index c = 0; c < o; ++c) {
    F8 acc = accumulate ? v8::load(db + c * kLanes) : v8::zero();
    for (Index r = 0; r < n; ++r) acc = v8::add(acc, v8::load(dz + (r * o + c) * kLanes));
    v8::store(acc, db + c * kLanes);
  }
}

void lanes_linear_backward_impl(const float* x, const float* w, const float* y, bool relu,
                                const float* dy, float* dz, float* dx, float* dw, float* db,
                                Index n, Index i, Index o, bool accumulate) {
  const float* g = dy;
  if (relu) {
    // dz = dy where y > 0, else +0 (an AND with the compare mask, no branch).
    for (Index e = 0; e < lanes_size(n, o); e += kLanes)
      v8::store(v8::relu_mask(v8::load(y + e), v8::load(dy + e)), dz + e);
    g = dz;
  }
  if (db != nullptr) lanes_bias_grad(g, n, o, db, accumulate);
  if (dx != nullptr) lanes_linear_dx(g, w, n, i, o, dx);
  lanes_linear_dw(g, x, n, i, o, dw, accumulate);
}

}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace shoal::kernels {

HWY_EXPORT(lanes_pack_impl);
HWY_EXPORT(lanes_linear_forward_impl);
HWY_EXPORT(lanes_linear_dx_impl);
HWY_EXPORT(lanes_linear_dw_impl);
HWY_EXPORT(lanes_bias_grad_impl);
HWY_EXPORT(lanes_linear_backward_impl);

void lanes_pack(std::span<const ConstMat<float>> src, float* dst) {
  SHOAL_DISPATCH(lanes_pack_impl)(src, dst);
}

void lanes_linear_forward(const float* x, const float* w, const float* b, Index n, Index i, Index o,
                          bool relu, float* y) {
  SHOAL_DISPATCH(lanes_linear_forward_impl)(x, w, b, n, i, o, relu, y);
}

void lanes_linear_dx(const float* dz, const float* w, Index n, Index i, Index o, float* dx) {
  SHOAL_DISPATCH(lanes_linear_dx_impl)(dz, w, n, i, o, dx);
}

void lanes_linear_dw(const float* dz, const float* x, Index n, Index i, Index o, float* dw,
                     bool accumulate) {
  SHOAL_DISPATCH(lanes_linear_dw_impl)(dz, x, n, i, o, dw, accumulate);
}

void lanes_bias_grad(const float* dz, Index n, Index o, float* db, bool accumulate) {
  SHOAL_DISPATCH(lanes_bias_grad_impl)(dz, n, o, db, accumulate);
}

void lanes_linear_backward(const float* x, const float* w, const float* y, bool relu,
                           const float* dy, float* dz, float* dx, float* dw, float* db, Index n,
                           Index i, Index o, bool accumulate) {
  SHOAL_DISPATCH(lanes_linear_backward_impl)
  (x, w, y, relu, dy, dz, dx, dw, db, n, i, o, accumulate);
}

}  // namespace shoal::kernels
#endif  // HWY_ONCE
