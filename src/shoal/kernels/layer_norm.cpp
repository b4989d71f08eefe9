// LayerNorm kernels (layer_norm.h). For float with C a multiple of 8 the AVX2 and AVX-512
// targets run the AVX2 (ymm) code below; otherwise, and on SSE4, the loops after it.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/layer_norm.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h

#include <immintrin.h>

#include <cmath>
#include <type_traits>

#include "dispatch.h"
#include "shoal/kernels/layer_norm.h"
#include "shoal/kernels/reduce.h"

HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {

#if HWY_TARGET <= HWY_AVX2
namespace {

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

}  // namespace

bool layer_norm_windows_f32(Index nr, Index nc, double eps, const float* w, const float* bs,
                            ConstMat<float> a, const ConstMat<float>* res, MatView<float> s,
                            MatView<float> y, Index batch, float* mean, float* rstd) {
  layer_norm_windows_avx2(nr, nc, eps, w, bs, a, res, s, y, batch, mean, rstd);
  return true;
}

bool layer_norm_backward_f32(Index nr, Index nc, const float* w, float* dw, float* db,
                             const float* mean, const float* rstd, ConstMat<float> x,
                             ConstMat<float> dy, MatView<float> dx, Index batch) {
  layer_norm_backward_avx2(nr, nc, w, dw, db, mean, rstd, x, dy, dx, batch);
  return true;
}

#else

bool layer_norm_windows_f32(Index, Index, double, const float*, const float*, ConstMat<float>,
                            const ConstMat<float>*, MatView<float>, MatView<float>, Index, float*,
                            float*) {
  return false;
}

bool layer_norm_backward_f32(Index, Index, const float*, float*, float*, const float*, const float*,
                             ConstMat<float>, ConstMat<float>, MatView<float>, Index) {
  return false;
}

#endif

}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace shoal::kernels {

HWY_EXPORT(layer_norm_windows_f32);
HWY_EXPORT(layer_norm_backward_f32);

namespace {

// Sample b's statistics and y = (s − μ)·r·w + bias, where s is x, or a + res written to s.
template <class T>
void layer_norm_windows(Index nr, Index nc, double eps, const T* w, const T* bs, ConstMat<T> a,
                        const ConstMat<T>* res, MatView<T> s, MatView<T> y, Index batch, T* mean,
                        T* rstd) {
  if constexpr (std::is_same_v<T, float>) {
    if (nc % 8 == 0 && w != nullptr && bs != nullptr &&
        SHOAL_DISPATCH(layer_norm_windows_f32)(nr, nc, eps, w, bs, a, res, s, y, batch, mean, rstd))
      return;
  }
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
      if (w != nullptr && bs != nullptr) {
        const T* __restrict wr = w + r * nc;
        const T* __restrict br = bs + r * nc;
        for (Index j = 0; j < nc; ++j) yr[j] = (xr[j] - m) * rs * wr[j] + br[j];
      } else if (w != nullptr) {
        const T* __restrict wr = w + r * nc;
        for (Index j = 0; j < nc; ++j) yr[j] = (xr[j] - m) * rs * wr[j];
      } else {
        for (Index j = 0; j < nc; ++j) yr[j] = (xr[j] - m) * rs;
      }
    }
  }
}

}  // namespace

template <class T>
void layer_norm_forward(Index n, Index r, Index c, double eps, const T* w, const T* b,
                        ConstMat<T> x, MatView<T> y, T* mean, T* rstd) {
  SHOAL_DCHECK(x.rows == n * r && x.cols == c && y.rows == x.rows && y.cols == c);
  layer_norm_windows<T>(r, c, eps, w, b, x, nullptr, MatView<T>{}, y, n, mean, rstd);
}

template <class T>
void layer_norm_residual_forward(Index n, Index r, Index c, double eps, const T* w, const T* b,
                                 ConstMat<T> a, ConstMat<T> res, MatView<T> s, MatView<T> y,
                                 T* mean, T* rstd) {
  SHOAL_DCHECK(a.rows == n * r && a.cols == c && res.rows == a.rows && res.cols == c &&
               s.rows == a.rows && y.rows == a.rows);
  layer_norm_windows<T>(r, c, eps, w, b, a, &res, s, y, n, mean, rstd);
}

template <class T>
void layer_norm_backward(Index batch, Index nr, Index nc, const T* w, T* dw, T* db, const T* mean,
                         const T* rstd, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx) {
  SHOAL_DCHECK(x.rows == batch * nr && dy.rows == x.rows && dx.rows == x.rows);
  const double inv_n = 1.0 / static_cast<double>(nr * nc);
  if constexpr (std::is_same_v<T, float>) {
    if (nc % 8 == 0 && w != nullptr && dw != nullptr && db != nullptr &&
        SHOAL_DISPATCH(layer_norm_backward_f32)(nr, nc, w, dw, db, mean, rstd, x, dy, dx, batch))
      return;
  }
  for (Index b = 0; b < batch; ++b) {
    const T m = mean[b];
    const T rs = rstd[b];
    // g = dy·w; dx = r·(g − mean(g) − x̂·mean(g·x̂)) (docs/derivations/layer_norm.md).
    double sg = 0, sgx = 0;
    for (Index r = 0; r < nr; ++r) {
      const T* __restrict xr = x.row(b * nr + r);
      const T* __restrict dyr = dy.row(b * nr + r);
      const T* __restrict wr = w != nullptr ? w + r * nc : nullptr;
      T* __restrict dwr = dw != nullptr ? dw + r * nc : nullptr;
      T* __restrict dbr = db != nullptr ? db + r * nc : nullptr;
      if (dwr != nullptr && dbr != nullptr) {
        for (Index j = 0; j < nc; ++j) {
          dwr[j] += dyr[j] * ((xr[j] - m) * rs);
          dbr[j] += dyr[j];
        }
      } else if (dwr != nullptr) {
        for (Index j = 0; j < nc; ++j) dwr[j] += dyr[j] * ((xr[j] - m) * rs);
      }
      if (w != nullptr) {
        sg += static_cast<double>(row_lane_sum<T>(nc, [&](Index j) { return dyr[j] * wr[j]; }));
        sgx += static_cast<double>(
            row_lane_sum<T>(nc, [&](Index j) { return (dyr[j] * wr[j]) * ((xr[j] - m) * rs); }));
      } else {
        sg += static_cast<double>(row_lane_sum<T>(nc, [&](Index j) { return dyr[j]; }));
        sgx += static_cast<double>(
            row_lane_sum<T>(nc, [&](Index j) { return dyr[j] * ((xr[j] - m) * rs); }));
      }
    }
    const T a = static_cast<T>(sg * inv_n);
    const T c = static_cast<T>(sgx * inv_n);
    for (Index r = 0; r < nr; ++r) {
      const T* xr = x.row(b * nr + r);
      const T* dyr = dy.row(b * nr + r);
      T* dxr = dx.row(b * nr + r);
      if (w != nullptr) {
        const T* wr = w + r * nc;
        for (Index j = 0; j < nc; ++j) {
          const T xhat = (xr[j] - m) * rs;
          dxr[j] = rs * (dyr[j] * wr[j] - a - xhat * c);
        }
      } else {
        for (Index j = 0; j < nc; ++j) {
          const T xhat = (xr[j] - m) * rs;
          dxr[j] = rs * (dyr[j] - a - xhat * c);
        }
      }
    }
  }
}

#define SHOAL_INSTANTIATE(T)                                                                      \
  template void layer_norm_forward<T>(Index, Index, Index, double, const T*, const T*,            \
                                      ConstMat<T>, MatView<T>, T*, T*);                           \
  template void layer_norm_residual_forward<T>(Index, Index, Index, double, const T*, const T*,   \
                                               ConstMat<T>, ConstMat<T>, MatView<T>, MatView<T>,  \
                                               T*, T*);                                           \
  template void layer_norm_backward<T>(Index, Index, Index, const T*, T*, T*, const T*, const T*, \
                                       ConstMat<T>, ConstMat<T>, MatView<T>);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::kernels
#endif  // HWY_ONCE
