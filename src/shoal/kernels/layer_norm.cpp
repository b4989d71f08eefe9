// LayerNorm kernels (layer_norm.h). For float with C a multiple of 8 every target runs the
// vector code below (full vectors of the target, 16 floats on AVX-512, then an 8-float step);
// otherwise, and for double, the loops after it.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/layer_norm.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h
#include "vec8.h"  // per target

#include <cmath>
#include <type_traits>

#include "dispatch.h"
#include "shoal/kernels/layer_norm.h"
#include "shoal/kernels/reduce.h"

HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace {

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr Index kN = static_cast<Index>(hn::MaxLanes(DF()));

// Walks a row of nc floats (a multiple of 8): f(d, j) for full vectors of the target, then one
// 8-float step (tag v8::D) where the vectors are wider than 8.
template <class F>
HWY_INLINE void row_steps(Index nc, F&& f) {
  Index j = 0;
  for (; j + kN <= nc; j += kN) f(DF(), j);
  if constexpr (kN > 8)
    if (j < nc) f(v8::D(), j);
}

// The sum over a row of what f(d, j, acc) accumulates, per lane then across lanes.
template <class F>
HWY_INLINE float row_sum(Index nc, F&& f) {
  const DF d;
  VF acc = hn::Zero(d);
  Index j = 0;
  for (; j + kN <= nc; j += kN) acc = f(d, j, acc);
  if constexpr (kN > 8) {
    v8::V a8 = v8::fold8(d, acc);
    if (j < nc) a8 = f(v8::D(), j, a8);
    return hn::GetLane(hn::SumOfLanes(v8::D(), a8));
  } else {
    return hn::GetLane(hn::SumOfLanes(d, acc));
  }
}

// The float forward when C is a multiple of 8: each row's sums in vectors, joined across rows
// in double.
void layer_norm_windows_vec(Index nr, Index nc, double eps, const float* w, const float* bs,
                            ConstMat<float> a, const ConstMat<float>* res, MatView<float> s,
                            MatView<float> y, Index batch, float* mean, float* rstd) {
  const double inv_n = 1.0 / static_cast<double>(nr * nc);
  ConstMat<float> x = res != nullptr ? ConstMat<float>(s) : a;
  for (Index b = 0; b < batch; ++b) {
    double sum = 0;
    for (Index r = 0; r < nr; ++r) {
      const Index row = b * nr + r;
      if (res != nullptr) {
        const float* ar = a.row(row);
        const float* rr = res->row(row);
        float* sr = s.row(row);
        sum += static_cast<double>(row_sum(nc, [&](auto d, Index j, auto acc) {
          const auto v = hn::Add(hn::LoadU(d, ar + j), hn::LoadU(d, rr + j));
          hn::StoreU(v, d, sr + j);
          return hn::Add(acc, v);
        }));
      } else {
        const float* xr = x.row(row);
        sum += static_cast<double>(row_sum(
            nc, [&](auto d, Index j, auto acc) { return hn::Add(acc, hn::LoadU(d, xr + j)); }));
      }
    }
    const float m = static_cast<float>(sum * inv_n);
    double q = 0;
    for (Index r = 0; r < nr; ++r) {
      const float* xr = x.row(b * nr + r);
      q += static_cast<double>(row_sum(nc, [&](auto d, Index j, auto acc) {
        const auto dv = hn::Sub(hn::LoadU(d, xr + j), hn::Set(d, m));
        return hn::MulAdd(dv, dv, acc);
      }));
    }
    const float rs = static_cast<float>(1.0 / std::sqrt(q * inv_n + eps));
    mean[b] = m;
    rstd[b] = rs;
    for (Index r = 0; r < nr; ++r) {
      const float* xr = x.row(b * nr + r);
      float* yr = y.row(b * nr + r);
      const float* wr = w + r * nc;
      const float* br = bs + r * nc;
      row_steps(nc, [&](auto d, Index j) {
        const auto xh = hn::Mul(hn::Sub(hn::LoadU(d, xr + j), hn::Set(d, m)), hn::Set(d, rs));
        hn::StoreU(hn::MulAdd(xh, hn::LoadU(d, wr + j), hn::LoadU(d, br + j)), d, yr + j);
      });
    }
  }
}

// The float backward, C a multiple of 8: one pass for the two sums and the affine grads, one
// for dx.
void layer_norm_backward_vec(Index nr, Index nc, const float* w, float* dw, float* db,
                             const float* mean, const float* rstd, ConstMat<float> x,
                             ConstMat<float> dy, MatView<float> dx, Index batch) {
  const double inv_n = 1.0 / static_cast<double>(nr * nc);
  for (Index b = 0; b < batch; ++b) {
    const float m = mean[b], rs = rstd[b];
    double sg = 0, sgx = 0;
    for (Index r = 0; r < nr; ++r) {
      const float* xr = x.row(b * nr + r);
      const float* dyr = dy.row(b * nr + r);
      const float* wr = w + r * nc;
      float* dwr = dw + r * nc;
      float* dbr = db + r * nc;
      // Both sums in one pass: the first in lanes of ag, the second of agx.
      const DF d;
      VF ag = hn::Zero(d), agx = ag;
      v8::V ag8 = hn::Zero(v8::D()), agx8 = ag8;
      const auto step = [&](auto dd, Index j, auto& g_acc, auto& gx_acc) {
        const auto dv = hn::LoadU(dd, dyr + j);
        const auto xh = hn::Mul(hn::Sub(hn::LoadU(dd, xr + j), hn::Set(dd, m)), hn::Set(dd, rs));
        const auto g = hn::Mul(dv, hn::LoadU(dd, wr + j));
        g_acc = hn::Add(g_acc, g);
        gx_acc = hn::MulAdd(g, xh, gx_acc);
        hn::StoreU(hn::MulAdd(dv, xh, hn::LoadU(dd, dwr + j)), dd, dwr + j);
        hn::StoreU(hn::Add(dv, hn::LoadU(dd, dbr + j)), dd, dbr + j);
      };
      Index j = 0;
      for (; j + kN <= nc; j += kN) step(d, j, ag, agx);
      if constexpr (kN > 8) {
        if (j < nc) step(v8::D(), j, ag8, agx8);
        ag8 = hn::Add(ag8, v8::fold8(d, ag));
        agx8 = hn::Add(agx8, v8::fold8(d, agx));
        sg += static_cast<double>(hn::GetLane(hn::SumOfLanes(v8::D(), ag8)));
        sgx += static_cast<double>(hn::GetLane(hn::SumOfLanes(v8::D(), agx8)));
      } else {
        sg += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, ag)));
        sgx += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, agx)));
      }
    }
    // dx = r·(g − a − x̂·c) = r·g − r·a − x̂·(r·c)
    const float ra = rs * static_cast<float>(sg * inv_n);
    const float rc = rs * static_cast<float>(sgx * inv_n);
    for (Index r = 0; r < nr; ++r) {
      const float* xr = x.row(b * nr + r);
      const float* dyr = dy.row(b * nr + r);
      float* dxr = dx.row(b * nr + r);
      const float* wr = w + r * nc;
      row_steps(nc, [&](auto d, Index j) {
        const auto rv = hn::Set(d, rs);
        const auto xh = hn::Mul(hn::Sub(hn::LoadU(d, xr + j), hn::Set(d, m)), rv);
        const auto g = hn::Mul(hn::LoadU(d, dyr + j), hn::LoadU(d, wr + j));
        const auto v = hn::MulSub(rv, g, hn::Set(d, ra));
        hn::StoreU(hn::NegMulAdd(xh, hn::Set(d, rc), v), d, dxr + j);
      });
    }
  }
}

}  // namespace

bool layer_norm_windows_f32(Index nr, Index nc, double eps, const float* w, const float* bs,
                            ConstMat<float> a, const ConstMat<float>* res, MatView<float> s,
                            MatView<float> y, Index batch, float* mean, float* rstd) {
  layer_norm_windows_vec(nr, nc, eps, w, bs, a, res, s, y, batch, mean, rstd);
  return true;
}

bool layer_norm_backward_f32(Index nr, Index nc, const float* w, float* dw, float* db,
                             const float* mean, const float* rstd, ConstMat<float> x,
                             ConstMat<float> dy, MatView<float> dx, Index batch) {
  layer_norm_backward_vec(nr, nc, w, dw, db, mean, rstd, x, dy, dx, batch);
  return true;
}

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
