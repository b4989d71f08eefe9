#include "shoal/layers/pool1d.h"

#include <algorithm>
#include <cmath>

namespace shoal::layers {
namespace {

// PyTorch's max_pool scan: the first element starts, a later one replaces it only when
// strictly greater or NaN (so the first of tied maxima, or the last NaN, wins).
template <class T>
Index argmax(const T* x, Index begin, Index end) {
  Index best = begin;
  for (Index i = begin + 1; i < end; ++i)
    if (x[i] > x[best] || std::isnan(x[i])) best = i;
  return best;
}

}  // namespace

template <class T>
void Pool1d<T>::plan(Planner&, Index max_rows) {
  SHOAL_CHECK(cfg.length > 0 && cfg.kernel_size > 0 && max_rows >= 0,
              "Pool1d needs length > 0 and kernel_size > 0, got length={} kernel_size={}",
              cfg.length, cfg.kernel_size);
}

template <class T>
void Pool1d<T>::forward(const Ctx&, ConstMat<T> x, MatView<T> y) {
  const Index L = cfg.length, k = cfg.kernel_size, P = out_length();
  SHOAL_DCHECK(x.cols == L && y.cols == P && x.rows == y.rows);
  for (Index r = 0; r < x.rows; ++r) {
    const T* xr = x.row(r);
    T* yr = y.row(r);
    for (Index q = 0; q < P; ++q) {
      const Index b = q * k, e = std::min(b + k, L);
      if (cfg.mode == PoolMode::kMax) {
        yr[q] = xr[argmax(xr, b, e)];
      } else {
        T s = 0;
        for (Index i = b; i < e; ++i) s += xr[i];
        yr[q] = s / static_cast<T>(e - b);
      }
    }
  }
}

template <class T>
void Pool1d<T>::backward(const Ctx&, ConstMat<T> x, ConstMat<T>, ConstMat<T> dy, MatView<T> dx) {
  const Index L = cfg.length, k = cfg.kernel_size, P = out_length();
  SHOAL_DCHECK(dx.cols == L && dy.cols == P && dx.rows == dy.rows);
  for (Index r = 0; r < dy.rows; ++r) {
    const T* gr = dy.row(r);
    T* dr = dx.row(r);
    for (Index q = 0; q < P; ++q) {
      const Index b = q * k, e = std::min(b + k, L);
      if (cfg.mode == PoolMode::kMax) {
        std::fill(dr + b, dr + e, T(0));
        dr[argmax(x.row(r), b, e)] = gr[q];
      } else {
        const T g = gr[q] / static_cast<T>(e - b);
        std::fill(dr + b, dr + e, g);
      }
    }
  }
}

template struct Pool1d<float>;
template struct Pool1d<double>;

}  // namespace shoal::layers
