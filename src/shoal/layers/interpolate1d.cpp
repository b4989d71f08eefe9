#include "shoal/layers/interpolate1d.h"

#include <algorithm>
#include <cmath>

namespace shoal::layers {

template <class T>
void Interpolate1d<T>::plan(Planner&, Index) {
  SHOAL_CHECK(cfg.in_size > 0 && cfg.out_size > 0,
              "Interpolate1d needs in_size > 0 and out_size > 0, got {} and {}", cfg.in_size,
              cfg.out_size);
}

template <class T>
typename Interpolate1d<T>::Tap Interpolate1d<T>::tap(Index h) const {
  const Index K = cfg.in_size, H = cfg.out_size;
  if (cfg.mode == InterpMode::kNearest) {
    // torch's nearest_idx: the identity and the exact doubling are special-cased, otherwise
    // a float scale whatever the dtype.
    Index i;
    if (K == H) {
      i = h;
    } else if (H == 2 * K) {
      i = h >> 1;
    } else {
      const float s = static_cast<float>(K) / static_cast<float>(H);
      i = std::min(static_cast<Index>(std::floor(static_cast<float>(h) * s)), K - 1);
    }
    return {i, i, T(0)};
  }
  const T s = static_cast<T>(K) / static_cast<T>(H);
  const T u = std::max(s * (static_cast<T>(h) + T(0.5)) - T(0.5), T(0));
  const auto i = static_cast<Index>(u);
  const Index j = i < K - 1 ? i + 1 : i;
  return {i, j, u - static_cast<T>(i)};
}

template <class T>
void Interpolate1d<T>::forward(const Ctx&, ConstMat<T> x, MatView<T> y) {
  SHOAL_DCHECK(x.cols == cfg.in_size && y.cols == cfg.out_size && x.rows == y.rows);
  for (Index h = 0; h < cfg.out_size; ++h) {
    const Tap t = tap(h);
    const T l0 = T(1) - t.lambda, l1 = t.lambda;
    for (Index r = 0; r < x.rows; ++r) {
      const T* xr = x.row(r);
      y.row(r)[h] = cfg.mode == InterpMode::kNearest ? xr[t.i] : l0 * xr[t.i] + l1 * xr[t.j];
    }
  }
}

template <class T>
void Interpolate1d<T>::backward(const Ctx&, ConstMat<T>, ConstMat<T>, ConstMat<T> dy,
                                MatView<T> dx) {
  SHOAL_DCHECK(dx.cols == cfg.in_size && dy.cols == cfg.out_size && dx.rows == dy.rows);
  for (Index r = 0; r < dx.rows; ++r) std::fill(dx.row(r), dx.row(r) + dx.cols, T(0));
  for (Index h = 0; h < cfg.out_size; ++h) {
    const Tap t = tap(h);
    const T l0 = T(1) - t.lambda, l1 = t.lambda;
    for (Index r = 0; r < dy.rows; ++r) {
      const T g = dy.row(r)[h];
      T* dr = dx.row(r);
      if (cfg.mode == InterpMode::kNearest) {
        dr[t.i] += g;
      } else {
        dr[t.i] += l0 * g;
        dr[t.j] += l1 * g;
      }
    }
  }
}

template struct Interpolate1d<float>;
template struct Interpolate1d<double>;

}  // namespace shoal::layers
