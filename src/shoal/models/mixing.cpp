#include "shoal/models/mixing.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define SHOAL_MIXING_AVX2 1
#endif

#include "shoal/kernels/gemm.h"
#include "shoal/kernels/reduce.h"
#include "shoal/layers/init.h"

namespace shoal::models {
namespace {

using kernels::Act;
using kernels::lane_sum;
using kernels::Trans;

// Σ_j f(j) over [0, n) in 8 independent lanes of T (vectorisable without -ffast-math; the order
// depends only on n). The LayerNorm sums a row (≤ a few hundred elements) this way and joins
// the rows in double.
template <class T, class F>
T row_lane_sum(Index n, F&& f) {
  T acc[8] = {};
  Index j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) acc[k] += f(j + k);
  T tail = 0;
  for (; j < n; ++j) tail += f(j);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

// dW[o, i] += Σ_c g[o, c] · x[i, c] for `batch` windows (g_b = g + b·O·ldg, x_b = x + b·I·ldx):
// the weight gradient of a Linear along time, g_b·x_bᵀ, without packing x_b transposed per
// window (libxsmm 1.17 transposes neither operand of this form). `acc` is scratch of O·I·8.
template <class T>
void time_weight_grad(Index no, Index ni, Index c, Index batch, const T* g, Index ldg, const T* x,
                      Index ldx, T* dw, T* acc) {
#ifdef SHOAL_MIXING_AVX2
  if constexpr (std::is_same_v<T, float>) {
    // Four rows of g against one row of x per step: 5 loads per 4 FMAs, the partial sums kept
    // as 8-lane vectors across windows and reduced once at the end.
    const Index cv = c / 8 * 8;
    std::fill(acc, acc + no * ni * 8, 0.0f);
    for (Index b = 0; b < batch; ++b) {
      const float* gb = g + b * no * ldg;
      const float* xb = x + b * ni * ldx;
      Index o = 0;
      for (; o + 4 <= no; o += 4)
        for (Index i = 0; i < ni; ++i) {
          const float* xr = xb + i * ldx;
          __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
          for (Index j = 0; j < cv; j += 8) {
            const __m256 xv = _mm256_loadu_ps(xr + j);
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(gb + o * ldg + j), xv, a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(gb + (o + 1) * ldg + j), xv, a1);
            a2 = _mm256_fmadd_ps(_mm256_loadu_ps(gb + (o + 2) * ldg + j), xv, a2);
            a3 = _mm256_fmadd_ps(_mm256_loadu_ps(gb + (o + 3) * ldg + j), xv, a3);
          }
          float* p = acc + (o * ni + i) * 8;
          _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), a0));
          p += ni * 8;
          _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), a1));
          p += ni * 8;
          _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), a2));
          p += ni * 8;
          _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), a3));
          for (Index j = cv; j < c; ++j)
            for (Index q = 0; q < 4; ++q)
              acc[((o + q) * ni + i) * 8] += gb[(o + q) * ldg + j] * xr[j];
        }
      for (; o < no; ++o)
        for (Index i = 0; i < ni; ++i) {
          const float* xr = xb + i * ldx;
          const float* gr = gb + o * ldg;
          __m256 a0 = _mm256_setzero_ps();
          for (Index j = 0; j < cv; j += 8)
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(gr + j), _mm256_loadu_ps(xr + j), a0);
          float* p = acc + (o * ni + i) * 8;
          _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), a0));
          for (Index j = cv; j < c; ++j) p[0] += gr[j] * xr[j];
        }
    }
    for (Index k = 0; k < no * ni; ++k) {
      const float* p = acc + k * 8;
      dw[k] += ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
    }
    return;
  }
#endif
  (void)acc;
  for (Index b = 0; b < batch; ++b)
    for (Index o = 0; o < no; ++o) {
      const T* gr = g + (b * no + o) * ldg;
      for (Index i = 0; i < ni; ++i) {
        const T* xr = x + (b * ni + i) * ldx;
        dw[o * ni + i] += row_lane_sum<T>(c, [&](Index j) { return gr[j] * xr[j]; });
      }
    }
}

}  // namespace

// ---- helpers ---------------------------------------------------------------------------------

template <class T>
void copy_view(ConstMat<T> x, MatView<T> y) {
  SHOAL_DCHECK(x.rows == y.rows && x.cols == y.cols);
  for (Index r = 0; r < x.rows; ++r) std::copy_n(x.row(r), x.cols, y.row(r));
}

template <class T>
void add_into(ConstMat<T> x, MatView<T> y) {
  SHOAL_DCHECK(x.rows == y.rows && x.cols == y.cols);
  for (Index r = 0; r < x.rows; ++r) {
    const T* xr = x.row(r);
    T* yr = y.row(r);
    for (Index c = 0; c < x.cols; ++c) yr[c] += xr[c];
  }
}

template <class T>
void transpose_windows(ConstMat<T> x, MatView<T> y, Index batch, bool accumulate) {
  const Index rows = x.rows / batch, cols = x.cols;
  SHOAL_DCHECK(x.rows == batch * rows && y.rows == batch * cols && y.cols == rows);
  for (Index b = 0; b < batch; ++b)
    for (Index r = 0; r < rows; ++r) {
      const T* xr = x.row(b * rows + r);
      if (accumulate)
        for (Index c = 0; c < cols; ++c) y(b * cols + c, r) += xr[c];
      else
        for (Index c = 0; c < cols; ++c) y(b * cols + c, r) = xr[c];
    }
}

// ---- TimeLinear ------------------------------------------------------------------------------

template <class T>
void TimeLinear<T>::plan(Planner& planner, Index max_batch) {
  SHOAL_CHECK(cfg.in > 0 && cfg.out > 0 && cfg.cols > 0,
              "TimeLinear needs in, out, cols > 0, got {} {} {}", cfg.in, cfg.out, cfg.cols);
  SHOAL_CHECK(cfg.act == Act::kNone || cfg.act == Act::kRelu, "TimeLinear supports none/relu");
  planner.param(weight, "weight", {cfg.out, cfg.in});
  planner.param(bias, "bias", {cfg.out});
  planner.buffer(dz, Region::kScratch, "dz", {max_batch * cfg.out, cfg.cols});
  planner.buffer(wt, Region::kScratch, "wt", {cfg.in * cfg.out + cfg.out * cfg.in * 8});
}

template <class T>
void TimeLinear<T>::init(RngStream& rng) {
  layers::fill_uniform(weight.value, layers::kaiming_uniform_bound(cfg.in), rng);
  layers::fill_uniform(bias.value, layers::linear_bias_bound(cfg.in), rng);
}

template <class T>
void TimeLinear<T>::forward(const Ctx&, ConstMat<T> x, MatView<T> y, Index batch) {
  const Index ni = cfg.in, no = cfg.out, c = cfg.cols;
  SHOAL_DCHECK(x.rows == batch * ni && y.rows == batch * no && x.cols == c && y.cols == c);
  const T* w = weight.value.data;
  const T* bs = bias.value.data;
  const bool relu = cfg.act == Act::kRelu;
  for (Index b = 0; b < batch; ++b) {
    T* yb = y.row(b * no);
    kernels::gemm<T>(Trans::kNo, Trans::kNo, no, c, ni, T(1), w, ni, x.row(b * ni), x.ld, T(0), yb,
                     y.ld);
    for (Index o = 0; o < no; ++o) {
      T* yr = yb + o * y.ld;
      const T bo = bs[o];
      if (relu)
        for (Index j = 0; j < c; ++j) yr[j] = std::max(yr[j] + bo, T(0));
      else
        for (Index j = 0; j < c; ++j) yr[j] += bo;
    }
  }
}

template <class T>
void TimeLinear<T>::backward(const Ctx&, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy,
                             MatView<T> dx, Index batch, bool accumulate_dx) {
  const Index ni = cfg.in, no = cfg.out, c = cfg.cols;
  SHOAL_DCHECK(dy.rows == batch * no && dy.cols == c && x.rows == batch * ni);
  T* db = bias.grad.data;
  ConstMat<T> g = dy;
  if (cfg.act == Act::kRelu) {
    MatView<T> z = dz.mat().rows_block(0, batch * no);
    for (Index r = 0; r < batch * no; ++r) {
      const T* yr = y.row(r);
      const T* dyr = dy.row(r);
      T* zr = z.row(r);
      for (Index j = 0; j < c; ++j) zr[j] = yr[j] > T(0) ? dyr[j] : T(0);
    }
    g = z;
  }
  // Wᵀ [I, O] once, so every window's dx_b = Wᵀ·g_b is a plain NN product.
  T* w_t = wt.view.data;
  const T* w = weight.value.data;
  for (Index o = 0; o < no; ++o)
    for (Index i = 0; i < ni; ++i) w_t[i * no + o] = w[o * ni + i];
  time_weight_grad<T>(no, ni, c, batch, g.data, g.ld, x.data, x.ld, weight.grad.data,
                      w_t + ni * no);
  for (Index b = 0; b < batch; ++b) {
    const T* gb = g.row(b * no);
    for (Index o = 0; o < no; ++o) {
      const T* gr = gb + o * g.ld;
      db[o] += static_cast<T>(lane_sum(c, [&](Index j) { return static_cast<double>(gr[j]); }));
    }
    // dx_b (+)= Wᵀ · g_b   [I, O]·[O, C]
    if (dx.data != nullptr)
      kernels::gemm<T>(Trans::kNo, Trans::kNo, ni, c, no, T(1), w_t, no, gb, g.ld,
                       accumulate_dx ? T(1) : T(0), dx.row(b * ni), dx.ld);
  }
}

// ---- WindowLayerNorm -------------------------------------------------------------------------

template <class T>
void WindowLayerNorm<T>::plan(Planner& planner, Index max_batch) {
  SHOAL_CHECK(cfg.rows > 0 && cfg.cols > 0, "LayerNorm over (rows, cols) needs both > 0");
  planner.param(weight, "weight", {cfg.rows, cfg.cols});
  planner.param(bias, "bias", {cfg.rows, cfg.cols});
  planner.buffer(mean, Region::kActivations, "mean", {max_batch});
  planner.buffer(rstd, Region::kActivations, "rstd", {max_batch});
}

template <class T>
void WindowLayerNorm<T>::init(RngStream&) {
  std::fill(weight.value.begin(), weight.value.end(), T(1));
  std::fill(bias.value.begin(), bias.value.end(), T(0));
}

namespace {

// Window b's statistics and y = (s − μ)·r·w + bias, where s is x, or a + res written to s.
template <class T>
void layer_norm_windows(Index nr, Index nc, double eps, const T* w, const T* bs, ConstMat<T> a,
                        const ConstMat<T>* res, MatView<T> s, MatView<T> y, Index batch, T* mean,
                        T* rstd);
#ifdef SHOAL_MIXING_AVX2
void layer_norm_windows_avx2(Index nr, Index nc, double eps, const float* w, const float* bs,
                             ConstMat<float> a, const ConstMat<float>* res, MatView<float> s,
                             MatView<float> y, Index batch, float* mean, float* rstd);
#endif

template <class T>
void layer_norm_windows(Index nr, Index nc, double eps, const T* w, const T* bs, ConstMat<T> a,
                        const ConstMat<T>* res, MatView<T> s, MatView<T> y, Index batch, T* mean,
                        T* rstd) {
#ifdef SHOAL_MIXING_AVX2
  if constexpr (std::is_same_v<T, float>) {
    if (nc % 8 == 0)
      return layer_norm_windows_avx2(nr, nc, eps, w, bs, a, res, s, y, batch, mean, rstd);
  }
#endif
  const double inv_n = 1.0 / static_cast<double>(nr * nc);
  ConstMat<T> x = res != nullptr ? ConstMat<T>(s) : a;
  for (Index b = 0; b < batch; ++b) {
    double sum = 0;
    for (Index r = 0; r < nr; ++r) {
      const Index row = b * nr + r;
      if (res != nullptr) {
        // r may be s itself (a projected residual already written there).
        const T* ar = a.row(row);
        const T* rr = res->row(row);
        T* sr = s.row(row);
        for (Index j = 0; j < nc; ++j) sr[j] = ar[j] + rr[j];
      }
      const T* xr = x.row(row);
      sum += static_cast<double>(row_lane_sum<T>(nc, [&](Index j) { return xr[j]; }));
    }
    const T m = static_cast<T>(sum * inv_n);
    double q = 0;
    for (Index r = 0; r < nr; ++r) {
      const T* xr = x.row(b * nr + r);
      q += static_cast<double>(row_lane_sum<T>(nc, [&](Index j) {
        const T d = xr[j] - m;
        return d * d;
      }));
    }
    const T rs = static_cast<T>(1.0 / std::sqrt(q * inv_n + eps));
    mean[b] = m;
    rstd[b] = rs;
    for (Index r = 0; r < nr; ++r) {
      const T* __restrict xr = x.row(b * nr + r);
      T* __restrict yr = y.row(b * nr + r);
      const T* __restrict wr = w + r * nc;
      const T* __restrict br = bs + r * nc;
      for (Index j = 0; j < nc; ++j) yr[j] = (xr[j] - m) * rs * wr[j] + br[j];
    }
  }
}

#ifdef SHOAL_MIXING_AVX2
float hsum8(__m256 v) {
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 d = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)));
}

// The float forward with 8-wide vectors when C is a multiple of 8: each row's sums in one
// vector, joined across rows in double.
void layer_norm_windows_avx2(Index nr, Index nc, double eps, const float* w, const float* bs,
                             ConstMat<float> a, const ConstMat<float>* res, MatView<float> s,
                             MatView<float> y, Index batch, float* mean, float* rstd) {
  const double inv_n = 1.0 / static_cast<double>(nr * nc);
  ConstMat<float> x = res != nullptr ? ConstMat<float>(s) : a;
  for (Index b = 0; b < batch; ++b) {
    double sum = 0;
    for (Index r = 0; r < nr; ++r) {
      const Index row = b * nr + r;
      __m256 acc = _mm256_setzero_ps();
      if (res != nullptr) {
        const float* ar = a.row(row);
        const float* rr = res->row(row);
        float* sr = s.row(row);
        for (Index j = 0; j < nc; j += 8) {
          const __m256 v = _mm256_add_ps(_mm256_loadu_ps(ar + j), _mm256_loadu_ps(rr + j));
          _mm256_storeu_ps(sr + j, v);
          acc = _mm256_add_ps(acc, v);
        }
      } else {
        const float* xr = x.row(row);
        for (Index j = 0; j < nc; j += 8) acc = _mm256_add_ps(acc, _mm256_loadu_ps(xr + j));
      }
      sum += static_cast<double>(hsum8(acc));
    }
    const float m = static_cast<float>(sum * inv_n);
    const __m256 mv = _mm256_set1_ps(m);
    double q = 0;
    for (Index r = 0; r < nr; ++r) {
      const float* xr = x.row(b * nr + r);
      __m256 acc = _mm256_setzero_ps();
      for (Index j = 0; j < nc; j += 8) {
        const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(xr + j), mv);
        acc = _mm256_fmadd_ps(d, d, acc);
      }
      q += static_cast<double>(hsum8(acc));
    }
    const float rs = static_cast<float>(1.0 / std::sqrt(q * inv_n + eps));
    mean[b] = m;
    rstd[b] = rs;
    const __m256 rv = _mm256_set1_ps(rs);
    for (Index r = 0; r < nr; ++r) {
      const float* xr = x.row(b * nr + r);
      float* yr = y.row(b * nr + r);
      const float* wr = w + r * nc;
      const float* br = bs + r * nc;
      for (Index j = 0; j < nc; j += 8) {
        const __m256 xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + j), mv), rv);
        _mm256_storeu_ps(yr + j,
                         _mm256_fmadd_ps(xh, _mm256_loadu_ps(wr + j), _mm256_loadu_ps(br + j)));
      }
    }
  }
}

// The float backward, C a multiple of 8: one pass for the two sums and the affine grads, one
// for dx.
void layer_norm_backward_avx2(Index nr, Index nc, const float* w, float* dw, float* db,
                              const float* mean, const float* rstd, ConstMat<float> x,
                              ConstMat<float> dy, MatView<float> dx, Index batch) {
  const double inv_n = 1.0 / static_cast<double>(nr * nc);
  for (Index b = 0; b < batch; ++b) {
    const __m256 mv = _mm256_set1_ps(mean[b]), rv = _mm256_set1_ps(rstd[b]);
    double sg = 0, sgx = 0;
    for (Index r = 0; r < nr; ++r) {
      const float* xr = x.row(b * nr + r);
      const float* dyr = dy.row(b * nr + r);
      const float* wr = w + r * nc;
      float* dwr = dw + r * nc;
      float* dbr = db + r * nc;
      __m256 ag = _mm256_setzero_ps(), agx = ag;
      for (Index j = 0; j < nc; j += 8) {
        const __m256 d = _mm256_loadu_ps(dyr + j);
        const __m256 xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + j), mv), rv);
        const __m256 g = _mm256_mul_ps(d, _mm256_loadu_ps(wr + j));
        ag = _mm256_add_ps(ag, g);
        agx = _mm256_fmadd_ps(g, xh, agx);
        _mm256_storeu_ps(dwr + j, _mm256_fmadd_ps(d, xh, _mm256_loadu_ps(dwr + j)));
        _mm256_storeu_ps(dbr + j, _mm256_add_ps(d, _mm256_loadu_ps(dbr + j)));
      }
      sg += static_cast<double>(hsum8(ag));
      sgx += static_cast<double>(hsum8(agx));
    }
    // dx = r·(g − a − x̂·c) = r·g − r·a − x̂·(r·c)
    const float rs = rstd[b];
    const __m256 ra = _mm256_set1_ps(rs * static_cast<float>(sg * inv_n));
    const __m256 rc = _mm256_set1_ps(rs * static_cast<float>(sgx * inv_n));
    for (Index r = 0; r < nr; ++r) {
      const float* xr = x.row(b * nr + r);
      const float* dyr = dy.row(b * nr + r);
      float* dxr = dx.row(b * nr + r);
      const float* wr = w + r * nc;
      for (Index j = 0; j < nc; j += 8) {
        const __m256 xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + j), mv), rv);
        const __m256 g = _mm256_mul_ps(_mm256_loadu_ps(dyr + j), _mm256_loadu_ps(wr + j));
        const __m256 v = _mm256_fmsub_ps(rv, g, ra);
        _mm256_storeu_ps(dxr + j, _mm256_fnmadd_ps(xh, rc, v));
      }
    }
  }
}
#endif

}  // namespace

template <class T>
void WindowLayerNorm<T>::forward(const Ctx&, ConstMat<T> x, MatView<T> y, Index batch) {
  SHOAL_DCHECK(x.rows == batch * cfg.rows && x.cols == cfg.cols && y.rows == x.rows &&
               y.cols == cfg.cols);
  layer_norm_windows<T>(cfg.rows, cfg.cols, cfg.eps, weight.value.data, bias.value.data, x, nullptr,
                        MatView<T>{}, y, batch, mean.view.data, rstd.view.data);
}

template <class T>
void WindowLayerNorm<T>::forward_residual(ConstMat<T> a, ConstMat<T> r, MatView<T> s, MatView<T> y,
                                          Index batch) {
  SHOAL_DCHECK(a.rows == batch * cfg.rows && a.cols == cfg.cols && r.rows == a.rows &&
               r.cols == a.cols && s.rows == a.rows && y.rows == a.rows);
  layer_norm_windows<T>(cfg.rows, cfg.cols, cfg.eps, weight.value.data, bias.value.data, a, &r, s,
                        y, batch, mean.view.data, rstd.view.data);
}

template <class T>
void WindowLayerNorm<T>::backward(const Ctx&, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx,
                                  Index batch) {
  const Index nr = cfg.rows, nc = cfg.cols;
  SHOAL_DCHECK(x.rows == batch * nr && dy.rows == x.rows && dx.rows == x.rows);
  const double inv_n = 1.0 / static_cast<double>(nr * nc);
  const T* w = weight.value.data;
  T* dw = weight.grad.data;
  T* db = bias.grad.data;
#ifdef SHOAL_MIXING_AVX2
  if constexpr (std::is_same_v<T, float>) {
    if (nc % 8 == 0)
      return layer_norm_backward_avx2(nr, nc, w, dw, db, mean.view.data, rstd.view.data, x, dy, dx,
                                      batch);
  }
#endif
  for (Index b = 0; b < batch; ++b) {
    const T m = mean.view.data[b];
    const T rs = rstd.view.data[b];
    // g = dy·w; dx = r·(g − mean(g) − x̂·mean(g·x̂)) (docs/derivations/layer_norm.md).
    double sg = 0, sgx = 0;
    for (Index r = 0; r < nr; ++r) {
      const T* __restrict xr = x.row(b * nr + r);
      const T* __restrict dyr = dy.row(b * nr + r);
      const T* __restrict wr = w + r * nc;
      T* __restrict dwr = dw + r * nc;
      T* __restrict dbr = db + r * nc;
      for (Index j = 0; j < nc; ++j) {
        dwr[j] += dyr[j] * ((xr[j] - m) * rs);
        dbr[j] += dyr[j];
      }
      sg += static_cast<double>(row_lane_sum<T>(nc, [&](Index j) { return dyr[j] * wr[j]; }));
      sgx += static_cast<double>(
          row_lane_sum<T>(nc, [&](Index j) { return (dyr[j] * wr[j]) * ((xr[j] - m) * rs); }));
    }
    const T a = static_cast<T>(sg * inv_n);
    const T c = static_cast<T>(sgx * inv_n);
    for (Index r = 0; r < nr; ++r) {
      const T* xr = x.row(b * nr + r);
      const T* dyr = dy.row(b * nr + r);
      T* dxr = dx.row(b * nr + r);
      const T* wr = w + r * nc;
      for (Index j = 0; j < nc; ++j) {
        const T xhat = (xr[j] - m) * rs;
        dxr[j] = rs * (dyr[j] * wr[j] - a - xhat * c);
      }
    }
  }
}

// ---- RevIn -----------------------------------------------------------------------------------

template <class T>
void RevIn<T>::plan(Planner& planner, Index max_batch) {
  SHOAL_CHECK(cfg.n_series > 0, "RevIN needs n_series > 0, got {}", cfg.n_series);
  planner.param(affine_weight, "affine_weight", {1, 1, cfg.n_series});
  planner.param(affine_bias, "affine_bias", {1, 1, cfg.n_series});
  planner.buffer(mu, Region::kActivations, "mu", {max_batch, cfg.n_series});
  planner.buffer(sigma, Region::kActivations, "sigma", {max_batch, cfg.n_series});
}

template <class T>
void RevIn<T>::init(RngStream&) {
  std::fill(affine_weight.value.begin(), affine_weight.value.end(), T(1));
  std::fill(affine_bias.value.begin(), affine_bias.value.end(), T(0));
}

template <class T>
void RevIn<T>::normalize(ConstMat<T> x, MatView<T> y, Index batch) {
  const Index n = cfg.n_series, len = x.rows / batch;
  SHOAL_DCHECK(x.cols == n && y.cols == n && y.rows == x.rows && x.rows == batch * len);
  const T* w = affine_weight.value.data;
  const T* bs = affine_bias.value.data;
  const double inv_l = 1.0 / static_cast<double>(len);
  for (Index b = 0; b < batch; ++b) {
    T* mb = mu.view.data + b * n;
    T* sb = sigma.view.data + b * n;
    for (Index s = 0; s < n; ++s) {
      const double m =
          lane_sum(len, [&](Index t) { return static_cast<double>(x(b * len + t, s)); }) * inv_l;
      const double v = lane_sum(len,
                                [&](Index t) {
                                  const double d = static_cast<double>(x(b * len + t, s)) - m;
                                  return d * d;
                                }) *
                       inv_l;
      mb[s] = static_cast<T>(m);
      sb[s] = static_cast<T>(std::sqrt(v + cfg.eps));
    }
    for (Index t = 0; t < len; ++t) {
      const T* xr = x.row(b * len + t);
      T* yr = y.row(b * len + t);
      for (Index s = 0; s < n; ++s) yr[s] = (xr[s] - mb[s]) / sb[s] * w[s] + bs[s];
    }
  }
}

template <class T>
void RevIn<T>::normalize_backward(ConstMat<T> x, ConstMat<T> dy, Index batch) {
  const Index n = cfg.n_series, len = x.rows / batch;
  T* dw = affine_weight.grad.data;
  T* db = affine_bias.grad.data;
  for (Index b = 0; b < batch; ++b) {
    const T* mb = mu.view.data + b * n;
    const T* sb = sigma.view.data + b * n;
    for (Index t = 0; t < len; ++t) {
      const T* xr = x.row(b * len + t);
      const T* dyr = dy.row(b * len + t);
      for (Index s = 0; s < n; ++s) {
        dw[s] += dyr[s] * ((xr[s] - mb[s]) / sb[s]);
        db[s] += dyr[s];
      }
    }
  }
}

template <class T>
void RevIn<T>::denormalize(ConstMat<T> x, MatView<T> y, Index batch) {
  const Index n = cfg.n_series, len = x.rows / batch;
  const T* w = affine_weight.value.data;
  const T* bs = affine_bias.value.data;
  for (Index b = 0; b < batch; ++b) {
    const T* mb = mu.view.data + b * n;
    const T* sb = sigma.view.data + b * n;
    for (Index t = 0; t < len; ++t) {
      const T* xr = x.row(b * len + t);
      T* yr = y.row(b * len + t);
      for (Index s = 0; s < n; ++s) yr[s] = (xr[s] - bs[s]) / w[s] * sb[s] + mb[s];
    }
  }
}

template <class T>
void RevIn<T>::denormalize_backward(ConstMat<T> x, ConstMat<T> dy, MatView<T> dx, Index batch) {
  const Index n = cfg.n_series, len = x.rows / batch;
  const T* w = affine_weight.value.data;
  const T* bs = affine_bias.value.data;
  T* dw = affine_weight.grad.data;
  T* db = affine_bias.grad.data;
  for (Index b = 0; b < batch; ++b) {
    const T* sb = sigma.view.data + b * n;
    for (Index t = 0; t < len; ++t) {
      const T* xr = x.row(b * len + t);
      const T* dyr = dy.row(b * len + t);
      T* dxr = dx.row(b * len + t);
      for (Index s = 0; s < n; ++s) {
        // y = (x − b)/w · σ + μ:  ∂y/∂x = σ/w,  ∂y/∂b = −σ/w,  ∂y/∂w = −(x − b)/w² · σ
        const T g = dyr[s] * sb[s] / w[s];
        dxr[s] = g;
        db[s] -= g;
        dw[s] -= g * (xr[s] - bs[s]) / w[s];
      }
    }
  }
}

// ---- FeatureMixingX --------------------------------------------------------------------------

namespace {

// y = act(x·Wᵀ + b) for a Linear with no activation or ReLU, as one NN GEMM against Wᵀ [I, O]
// (packed into wt when `repack`), then bias and ReLU on the output.
template <class T>
void linear_forward_packed(const layers::Linear<T>& lin, T* wt, bool repack, ConstMat<T> x,
                           MatView<T> y) {
  const Index in = lin.cfg.in, out = lin.cfg.out;
  SHOAL_DCHECK(x.cols == in && y.cols == out && x.rows == y.rows && lin.cfg.act != Act::kGelu);
  if (repack) {
    const T* w = lin.p.weight.value.data;
    for (Index o = 0; o < out; ++o)
      for (Index i = 0; i < in; ++i) wt[i * out + o] = w[o * in + i];
  }
  kernels::gemm<T>(Trans::kNo, Trans::kNo, x.rows, out, in, T(1), x.data, x.ld, wt, out, T(0),
                   y.data, y.ld);
  const T* __restrict bs = lin.cfg.bias ? lin.p.bias.value.data : nullptr;
  const bool relu = lin.cfg.act == Act::kRelu;
  for (Index r = 0; r < y.rows; ++r) {
    T* __restrict yr = y.row(r);
    if (bs != nullptr)
      for (Index j = 0; j < out; ++j) yr[j] += bs[j];
    if (relu)
      for (Index j = 0; j < out; ++j) yr[j] = std::max(yr[j], T(0));
  }
}

}  // namespace

template <class T>
FeatureMixingX<T>::FeatureMixingX(Config c)
    : cfg(c),
      lin1({.in = c.in, .out = c.ff, .act = Act::kRelu}),
      lin2({.in = c.ff, .out = c.out}),
      proj({.in = c.in, .out = c.out}),
      drop1({.p = c.dropout, .stream = c.stream}),
      drop2({.p = c.dropout, .stream = c.stream + 1}),
      norm({.rows = c.h, .cols = c.out}) {}

template <class T>
void FeatureMixingX<T>::plan(Planner& planner, Index max_batch) {
  const Index rows = max_batch * cfg.h;
  each_child([&](std::string_view prefix, auto& layer) {
    planner.push_scope(prefix);
    layer.plan(planner, std::is_same_v<std::decay_t<decltype(layer)>, WindowLayerNorm<T>>
                            ? max_batch
                            : rows);
    planner.pop_scope();
  });
  drop1.plan(planner, rows);
  drop2.plan(planner, rows);
  planner.buffer(a1, Region::kActivations, "a1", {rows, cfg.ff});
  planner.buffer(a2, Region::kActivations, "a2", {rows, cfg.out});
  planner.buffer(s, Region::kActivations, "s", {rows, cfg.out});
  planner.buffer(ds, Region::kActivationGrads, "ds", {rows, cfg.out});
  if (cfg.dropout > 0) planner.buffer(da2, Region::kActivationGrads, "da2", {rows, cfg.out});
  planner.buffer(da1, Region::kActivationGrads, "da1", {rows, cfg.ff});
  if (projects()) planner.buffer(dproj, Region::kScratch, "dproj", {rows, cfg.in});
  planner.buffer(wt1, Region::kScratch, "wt1", {cfg.in, cfg.ff});
  planner.buffer(wt2, Region::kScratch, "wt2", {cfg.ff, cfg.out});
  if (projects()) planner.buffer(wtp, Region::kScratch, "wtp", {cfg.in, cfg.out});
}

template <class T>
void FeatureMixingX<T>::init(RngStream& rng) {
  each_child([&](std::string_view, auto& layer) { layer.init(rng); });
}

template <class T>
void FeatureMixingX<T>::forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index batch,
                                Index row0) {
  const Index rows = batch * cfg.h;
  MatView<T> a1r = a1.mat().rows_block(0, rows), a2r = a2.mat().rows_block(0, rows),
             sr = s.mat().rows_block(0, rows);
  // The first chunk of a batch packs the transposed weights; later chunks reuse them.
  const bool repack = row0 == 0;
  linear_forward_packed<T>(lin1, wt1.view.data, repack, x, a1r);
  // In place: ReLU backward only needs the sign of a kept value.
  drop1.forward(ctx, a1r, a1r, row0);
  linear_forward_packed<T>(lin2, wt2.view.data, repack, a1r, a2r);
  drop2.forward(ctx, a2r, a2r, row0);
  if (projects()) {
    // s = proj(x) first, then the norm adds a2 to it while it sums.
    linear_forward_packed<T>(proj, wtp.view.data, repack, x, sr);
    norm.forward_residual(a2r, sr, sr, y, batch);
  } else {
    norm.forward_residual(a2r, x, sr, y, batch);
  }
}

template <class T>
void FeatureMixingX<T>::backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx,
                                 Index batch, Index row0) {
  const Index rows = batch * cfg.h;
  MatView<T> a1r = a1.mat().rows_block(0, rows), a2r = a2.mat().rows_block(0, rows),
             sr = s.mat().rows_block(0, rows), dsr = ds.mat().rows_block(0, rows),
             da1r = da1.mat().rows_block(0, rows);
  norm.backward(ctx, sr, dy, dsr, batch);
  // Without dropout (or in eval) its backward is the identity: skip the copy.
  ConstMat<T> da2r = dsr;
  if (ctx.training && cfg.dropout > 0) {
    MatView<T> d2 = da2.mat().rows_block(0, rows);
    drop2.backward(ctx, a2r, a2r, dsr, d2, row0);
    da2r = d2;
  }
  lin2.backward(ctx, a1r, a2r, da2r, da1r);
  drop1.backward(ctx, a1r, a1r, da1r, da1r, row0);
  lin1.backward(ctx, x, a1r, da1r, dx);
  if (projects()) {
    MatView<T> dp = dx.data != nullptr ? dproj.mat().rows_block(0, rows) : MatView<T>{};
    proj.backward(ctx, x, sr, dsr, dp);
    if (dx.data != nullptr) add_into<T>(dp, dx);
  } else if (dx.data != nullptr) {
    add_into<T>(dsr, dx);
  }
}

// ---- TemporalMixingX -------------------------------------------------------------------------

template <class T>
TemporalMixingX<T>::TemporalMixingX(Config c)
    : cfg(c),
      norm({.rows = c.h, .cols = c.cols}),
      lin({.in = c.h, .out = c.h, .cols = c.cols, .act = Act::kRelu}),
      drop({.p = c.dropout, .stream = c.stream}) {}

template <class T>
void TemporalMixingX<T>::plan(Planner& planner, Index max_batch) {
  const Index rows = max_batch * cfg.h;
  planner.push_scope("temporal_norm.");
  norm.plan(planner, max_batch);
  planner.pop_scope();
  planner.push_scope("temporal_lin.");
  lin.plan(planner, max_batch);
  planner.pop_scope();
  drop.plan(planner, rows);
  planner.buffer(a, Region::kActivations, "a", {rows, cfg.cols});
  planner.buffer(s, Region::kActivations, "s", {rows, cfg.cols});
  if (cfg.dropout > 0) planner.buffer(da, Region::kActivationGrads, "da", {rows, cfg.cols});
}

template <class T>
void TemporalMixingX<T>::init(RngStream& rng) {
  norm.init(rng);
  lin.init(rng);
}

template <class T>
void TemporalMixingX<T>::forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index batch,
                                 Index row0) {
  const Index rows = batch * cfg.h;
  MatView<T> ar = a.mat().rows_block(0, rows), sr = s.mat().rows_block(0, rows);
  lin.forward(ctx, x, ar, batch);
  drop.forward(ctx, ar, ar, row0);
  norm.forward_residual(ar, x, sr, y, batch);
}

template <class T>
void TemporalMixingX<T>::backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx,
                                  Index batch, Index row0) {
  const Index rows = batch * cfg.h;
  MatView<T> ar = a.mat().rows_block(0, rows), sr = s.mat().rows_block(0, rows);
  // The norm's input gradient is the residual's share of dx; the time Linear then adds its own.
  norm.backward(ctx, sr, dy, dx, batch);
  ConstMat<T> dar = dx;
  if (ctx.training && cfg.dropout > 0) {
    MatView<T> d = da.mat().rows_block(0, rows);
    drop.backward(ctx, ar, ar, dx, d, row0);
    dar = d;
  }
  lin.backward(ctx, x, ar, dar, dx, batch, /*accumulate_dx=*/true);
}

#define SHOAL_INSTANTIATE(T)                           \
  template struct TimeLinear<T>;                       \
  template struct WindowLayerNorm<T>;                  \
  template struct RevIn<T>;                            \
  template struct FeatureMixingX<T>;                   \
  template struct TemporalMixingX<T>;                  \
  template void copy_view<T>(ConstMat<T>, MatView<T>); \
  template void add_into<T>(ConstMat<T>, MatView<T>);  \
  template void transpose_windows<T>(ConstMat<T>, MatView<T>, Index, bool);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::models
