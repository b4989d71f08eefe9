#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/relu_tower.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h
#include "vec8.h"  // per target

#include "dispatch.h"
#include "shoal/kernels/relu_tower.h"

#include <algorithm>
#include <cmath>

#include "shoal/core/error.h"

// Tiles of 8-float groups (vec8.h) on every target: one vector each on AVX2 and AVX-512 (its
// 256-bit form: the tower's widths are multiples of 8, and its logits 8 lanes), two on SSE4
// and NEON.
HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {
namespace {

using v8::F8;

// Rows per tile: 6 rows × 2 vectors keep 12 independent FMA chains in registers against 2
// loads and 6 broadcasts per step (8 rows × 1 vector: 8 chains against 9 loads; 6–8% slower
// for the whole pass on its own). kLanes: the predict layer sums a tile's rows 8 at a time,
// one per lane (the last two lanes idle), into logits the loss reads.
constexpr int kRows = static_cast<int>(kReluTowerTileRows);
constexpr int kLanes = 8;
static_assert(kRows <= kLanes);

using v8::relu;
using v8::relu_mask;

// acc[i][v] += Σ_{p<k} A(i, p)·B[p, 8v..8v+8) for i < MR, A(i, p) = a[i·a_rs + p·a_ks]: per p,
// one scalar broadcast per row of acc against NV loaded vectors of B. The tiles' products
// (A = the tile's rows, a_ks = 1) and the weight gradients (A = dzᵀ: a_rs = 1, a_ks = the
// row stride of dz, B = the layer's input, k = the chunk's rows) are both this loop.
template <int MR, int NV>
inline void bcast_fma(const float* a, Index a_rs, Index a_ks, const float* b, Index ldb, Index k,
                      F8 (&acc)[MR][NV]) {
  for (Index p = 0; p < k; ++p) {
    F8 bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = v8::load(b + p * ldb + 8 * v);
    for (int i = 0; i < MR; ++i) {
      const F8 x = v8::set(a[i * a_rs + p * a_ks]);
      for (int v = 0; v < NV; ++v) acc[i][v] = v8::mul_add(x, bv[v], acc[i][v]);
    }
  }
}

// Vectors of outputs per pass over k: 2 where the width allows (12 accumulators).
template <int L>
constexpr int vecs_per_pass() {
  return L % 16 == 0 ? 2 : 1;
}

// y[r, :] = relu(bias + x[r, :]·Wᵀ) for L outputs, wt = Wᵀ [k, L]; y is [kRows, L].
template <int L>
inline void layer_forward(const float* x, Index ldx, Index k, const float* wt, const float* bias,
                          float* y) {
  constexpr int NV = vecs_per_pass<L>();
  for (int v0 = 0; v0 < L / 8; v0 += NV) {
    F8 acc[kRows][NV];
    for (int v = 0; v < NV; ++v) {
      const F8 b = v8::load(bias + 8 * (v0 + v));
      for (int r = 0; r < kRows; ++r) acc[r][v] = b;
    }
    bcast_fma<kRows, NV>(x, ldx, 1, wt + 8 * v0, L, k, acc);
    for (int r = 0; r < kRows; ++r)
      for (int v = 0; v < NV; ++v) v8::store_aligned(relu(acc[r][v]), y + r * L + 8 * (v0 + v));
  }
}
// d_in[r, :] = mask(y_in > 0, d_out[r, :]·W) for L inputs, W [k, L] (k outputs); [kRows, L].
template <int L>
inline void layer_input_grad(const float* d_out, Index k, const float* w, const float* y_in,
                             float* d_in) {
  constexpr int NV = vecs_per_pass<L>();
  for (int v0 = 0; v0 < L / 8; v0 += NV) {
    F8 acc[kRows][NV];
    for (auto& row : acc)
      for (auto& x : row) x = v8::zero();
    bcast_fma<kRows, NV>(d_out, k, 1, w + 8 * v0, L, k, acc);
    for (int r = 0; r < kRows; ++r)
      for (int v = 0; v < NV; ++v) {
        const Index o = r * L + 8 * (v0 + v);
        v8::store_aligned(relu_mask(v8::load_aligned(y_in + o), acc[r][v]), d_in + o);
      }
  }
}

// dw[i, :] += Σ_{p<k} A(i, p)·X[p, :] for i < MR, A(i, p) = a[i·a_rs + p·a_ks], X [k, 8·NV].
template <int MR, int NV>
inline void grad_block(const float* a, Index a_rs, Index a_ks, const float* x, Index ldx, Index k,
                       float* dw, Index ldw) {
  F8 acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) acc[i][v] = v8::load(dw + i * ldw + 8 * v);
  bcast_fma<MR, NV>(a, a_rs, a_ks, x, ldx, k, acc);
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) v8::store(acc[i][v], dw + i * ldw + 8 * v);
}

// The weight gradient of a chunk, dw[o, :] += Σ_r D(r, o)·X[r, :] for o < m, D(r, o) =
// d[r·ldd + o], X [rows, n] (n a multiple of 16): blocks of 4 rows × 16 columns of dw, each
// over all the rows with its 8 accumulators in registers (4 broadcasts and 2 loads per 8
// FMAs: 96% of peak on its own on Zen 3). Per 6-row tile, every block's accumulators were
// loaded and stored again after 6 rows of FMAs.
inline void chunk_weight_grad(const float* d, Index ldd, const float* x, Index n, Index rows,
                              Index m, float* dw, Index ldw) {
  constexpr int kMr = 4;
  const Index full = m / kMr * kMr;
  for (Index c0 = 0; c0 < n; c0 += 16) {
    for (Index o = 0; o < full; o += kMr)
      grad_block<kMr, 2>(d + o, 1, ldd, x + c0, n, rows, dw + o * ldw + c0, ldw);
    const float* dt = d + full;
    float* wt = dw + full * ldw + c0;
    const Index tail = m - full;
    if (tail == 3) grad_block<3, 2>(dt, 1, ldd, x + c0, n, rows, wt, ldw);
    if (tail == 2) grad_block<2, 2>(dt, 1, ldd, x + c0, n, rows, wt, ldw);
    if (tail == 1) grad_block<1, 2>(dt, 1, ldd, x + c0, n, rows, wt, ldw);
  }
}

// db[:] += Σ_r d[r, :] for L columns.
template <int L>
inline void bias_grad(const float* d, float* db) {
  for (int v = 0; v < L / 8; ++v) {
    F8 s = v8::load(db + 8 * v);
    for (int r = 0; r < kRows; ++r) s = v8::add(s, v8::load_aligned(d + r * L + 8 * v));
    v8::store(s, db + 8 * v);
  }
}

// One tile: rows [t0, t0 + valid) of the chunk (valid ≤ kRows; the padding rows repeat the
// last row's ids, read the context's padding rows and get dz = 0, so they add nothing).
// Requires L1 % 16 == 0 (the first layer runs two vectors per pass).
template <int L1, int L2, int L3, int F>
void tile(const ReluTowerChunk& a, Index t0, Index valid, double& loss) {
  alignas(32) float h3[kRows * L3], g[kRows * F];
  float* h1 = a.h1 + t0 * L1;
  float* h2 = a.h2 + t0 * L2;
  float* d1 = a.d1 + t0 * L1;
  float* d2 = a.d2 + t0 * L2;
  float* d3 = a.d3 + t0 * L3;
  alignas(32) float dz[kLanes];
  int32_t u[kRows], it[kRows];
  const float *pu[kRows], *qi[kRows];
  for (int r = 0; r < kRows; ++r) {
    const Index row = t0 + std::min<Index>(r, valid - 1);
    u[r] = a.users[row];
    it[r] = a.items[row];
    pu[r] = a.proj_u + static_cast<Index>(a.slot_u[u[r]]) * L1;
    qi[r] = a.proj_i + static_cast<Index>(a.slot_i[it[r]]) * L1;
  }
  const float* ctx = a.ctx + t0 * a.ld_ctx;

  // Forward: the first layer from the rows' projections and the context, then the tower.
  for (int v0 = 0; v0 < L1 / 8; v0 += 2) {
    F8 acc[kRows][2];
    for (int v = 0; v < 2; ++v) {
      const F8 b = v8::load(a.b1 + 8 * (v0 + v));
      for (int r = 0; r < kRows; ++r)
        acc[r][v] =
            v8::add(v8::add(b, v8::load(pu[r] + 8 * (v0 + v))), v8::load(qi[r] + 8 * (v0 + v)));
    }
    bcast_fma<kRows, 2>(ctx, a.ld_ctx, 1, a.wc_t + 8 * v0, L1, a.c, acc);
    for (int r = 0; r < kRows; ++r)
      for (int v = 0; v < 2; ++v) v8::store_aligned(relu(acc[r][v]), h1 + r * L1 + 8 * (v0 + v));
  }
  layer_forward<L2>(h1, L1, L1, a.w2_t, a.b2, h2);
  layer_forward<L3>(h2, L2, L2, a.w3_t, a.b3, h3);
  // GMF product and the predict layer: z[r] = b_p + w_p · [g[r], h3[r]].
  F8 zv;
  {
    F8 s[kLanes];
    for (int r = kRows; r < kLanes; ++r) s[r] = v8::zero();
    for (int r = 0; r < kRows; ++r) {
      const float* pg = a.pg + static_cast<Index>(u[r]) * F;
      const float* qg = a.qg + static_cast<Index>(it[r]) * F;
      F8 acc = v8::zero();
      for (int v = 0; v < F / 8; ++v) {
        const F8 gv = v8::mul(v8::load(pg + 8 * v), v8::load(qg + 8 * v));
        v8::store_aligned(gv, g + r * F + 8 * v);
        acc = v8::mul_add(gv, v8::load(a.wp + 8 * v), acc);
      }
      for (int v = 0; v < L3 / 8; ++v)
        acc = v8::mul_add(v8::load_aligned(h3 + r * L3 + 8 * v), v8::load(a.wp + F + 8 * v), acc);
      s[r] = acc;
    }
    zv = v8::add(v8::lane_sums(s), v8::set(a.bp));
  }
  // BCE-with-logits on the logits' lanes by bce.h's lanes, as the layer-by-layer path
  // (bitwise the same per row); the padding rows' labels and dz are 0. The logits stay in a
  // register and the labels are a masked load where the target has one: through bce_logits,
  // the padded copies (scalar stores read back as a vector, which the store buffer cannot
  // forward) cost about 3% of the pass.
  {
    F8 d;
    alignas(32) float l[kLanes];
    v8::store_aligned(v8::bce_logit(zv, v8::load_first(a.labels + t0, valid), v8::set(a.scale), d),
                      l);
    v8::store_aligned(v8::first(d, valid), dz);
    double sum = 0;  // in row order, as bce_logits
    for (Index r = 0; r < valid; ++r) sum += static_cast<double>(l[r]);
    loss += sum;
  }
  if (a.logits != nullptr) {
    alignas(32) float z[kLanes];
    v8::store_aligned(zv, z);
    std::copy_n(z, valid, a.logits + t0);
  }

  // Backward. The predict layer: dw_p += Σ dz·[g, h3], db_p += Σ dz.
  float dbp = *a.dbp;
  for (int r = 0; r < kRows; ++r) dbp += dz[r];
  *a.dbp = dbp;
  grad_block<1, F / 8>(dz, 0, 1, g, F, kRows, a.dwp, 0);
  grad_block<1, L3 / 8>(dz, 0, 1, h3, L3, kRows, a.dwp + F, 0);
  // GMF: d(P_g[u]) += dg ⊙ Q_g[i], d(Q_g[i]) += dg ⊙ P_g[u], dg = dz·w_p[:F], in row order.
  for (int r = 0; r < valid; ++r) {
    const F8 d = v8::set(dz[r]);
    const float* pg = a.pg + static_cast<Index>(u[r]) * F;
    const float* qg = a.qg + static_cast<Index>(it[r]) * F;
    float* gp = a.gpg + static_cast<Index>(a.slot_u[u[r]]) * F;
    float* gq = a.gqg + static_cast<Index>(a.slot_i[it[r]]) * F;
    for (int v = 0; v < F / 8; ++v) {
      const F8 dg = v8::mul(d, v8::load(a.wp + 8 * v));
      v8::store(v8::mul_add(dg, v8::load(qg + 8 * v), v8::load(gp + 8 * v)), gp + 8 * v);
      v8::store(v8::mul_add(dg, v8::load(pg + 8 * v), v8::load(gq + 8 * v)), gq + 8 * v);
    }
  }
  // The tower, top down: d3 = mask(dz·w_p[F:]), then each layer's db and input gradient
  // (the weight gradients run once per chunk, run_chunk).
  for (int r = 0; r < kRows; ++r) {
    const F8 d = v8::set(dz[r]);
    for (int v = 0; v < L3 / 8; ++v) {
      const Index o = r * L3 + 8 * v;
      v8::store_aligned(relu_mask(v8::load_aligned(h3 + o), v8::mul(d, v8::load(a.wp + F + 8 * v))),
                        d3 + o);
    }
  }
  bias_grad<L3>(d3, a.db3);
  layer_input_grad<L2>(d3, L3, a.w3, h2, d2);
  bias_grad<L2>(d2, a.db2);
  layer_input_grad<L1>(d2, L2, a.w2, h1, d1);
  // The first layer: the bias, and d1 summed per distinct row for the rows' GEMMs at the
  // share's end.
  bias_grad<L1>(d1, a.db1);
  for (int r = 0; r < valid; ++r) {
    float* au = a.dz_u + static_cast<Index>(a.slot_u[u[r]]) * L1;
    float* ai = a.dz_i + static_cast<Index>(a.slot_i[it[r]]) * L1;
    for (int v = 0; v < L1 / 8; ++v) {
      const F8 d = v8::load_aligned(d1 + r * L1 + 8 * v);
      v8::store(v8::add(v8::load(au + 8 * v), d), au + 8 * v);
      v8::store(v8::add(v8::load(ai + 8 * v), d), ai + 8 * v);
    }
  }
}

// The rows a tile reads at random (projections, GMF rows) and adds into (dz sums, GMF row
// grads): a step's tables, moments and buffers outgrow L2, so they are fetched a tile ahead.
template <int L1, int F>
void prefetch_tile(const ReluTowerChunk& a, Index t0) {
  const Index end = std::min<Index>(t0 + kRows, a.n);
  for (Index row = t0; row < end; ++row) {
    const Index su = a.slot_u[a.users[row]], si = a.slot_i[a.items[row]];
    for (Index j = 0; j < L1; j += 16) {
      __builtin_prefetch(a.proj_u + su * L1 + j);
      __builtin_prefetch(a.proj_i + si * L1 + j);
      __builtin_prefetch(a.dz_u + su * L1 + j, 1);
      __builtin_prefetch(a.dz_i + si * L1 + j, 1);
    }
    const Index u = a.users[row], i = a.items[row];
    for (Index j = 0; j < F; j += 16) {
      __builtin_prefetch(a.pg + u * F + j);
      __builtin_prefetch(a.qg + i * F + j);
      __builtin_prefetch(a.gpg + su * F + j, 1);
      __builtin_prefetch(a.gqg + si * F + j, 1);
    }
  }
}

template <int L1, int L2, int L3, int F>
double run_chunk(const ReluTowerChunk& a) {
  double loss = 0;
  const Index tiles = (a.n + kRows - 1) / kRows;
  prefetch_tile<L1, F>(a, 0);
  for (Index k = 0; k < tiles; ++k) {
    const Index t0 = k * kRows;
    if (t0 + kRows < a.n) prefetch_tile<L1, F>(a, t0 + kRows);
    tile<L1, L2, L3, F>(a, t0, std::min<Index>(kRows, a.n - t0), loss);
  }
  // The weight gradients over the chunk's rows (the padding rows' d are 0): the context
  // columns' transposed (dWcᵀ[k, :] += Σ_r c[r, k]·d1[r, :]), then W2's and W3's.
  const Index rows = tiles * kRows;
  chunk_weight_grad(a.ctx, a.ld_ctx, a.d1, L1, rows, a.c, a.dwc_t, L1);
  chunk_weight_grad(a.d2, L2, a.h1, L1, rows, L2, a.dw2, L1);
  chunk_weight_grad(a.d3, L3, a.h2, L2, rows, L3, a.dw3, L2);
  return loss;
}

}  // namespace

bool relu_tower_supported_impl(Index l1, Index l2, Index l3, Index f) {
  return (l1 == 32 && l2 == 16 && l3 == 8 && f == 8) ||
         (l1 == 64 && l2 == 32 && l3 == 16 && f == 16);
}

double relu_tower_chunk_impl(Index l1, Index l2, Index l3, Index f, const ReluTowerChunk& a) {
  if (l1 == 32 && l2 == 16 && l3 == 8 && f == 8) return run_chunk<32, 16, 8, 8>(a);
  if (l1 == 64 && l2 == 32 && l3 == 16 && f == 16) return run_chunk<64, 32, 16, 16>(a);
  SHOAL_CHECK(false, "no fused NCF kernel for widths {}, {}, {}, factors {}", l1, l2, l3, f);
  return 0;
}

}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace shoal::kernels {

HWY_EXPORT(relu_tower_supported_impl);
HWY_EXPORT(relu_tower_chunk_impl);

bool relu_tower_supported(Index l1, Index l2, Index l3, Index f) {
  return SHOAL_DISPATCH(relu_tower_supported_impl)(l1, l2, l3, f);
}

double relu_tower_chunk(Index l1, Index l2, Index l3, Index f, const ReluTowerChunk& a) {
  return SHOAL_DISPATCH(relu_tower_chunk_impl)(l1, l2, l3, f, a);
}

}  // namespace shoal::kernels
#endif  // HWY_ONCE
