// Shared helpers for the kernel tests: deterministic random fills, buffers that can be offset
// by one element (misaligned) and padded (ld > cols), and a rounding-error bound.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "shoal/core/rng.h"
#include "shoal/core/tensor.h"

namespace shoal::kernels::testing {

// A [rows, cols] matrix with leading dim cols + pad, starting `offset` elements into its
// allocation (offset 1 makes it 4- or 8-byte but not 32-byte aligned).
template <class T>
struct TestMat {
  std::vector<T> storage;
  MatView<T> view;

  TestMat(Index rows, Index cols, Index pad, Index offset) {
    const Index ld = cols + pad;
    storage.assign(static_cast<size_t>(rows * ld + offset + 1), T(0));
    view = {storage.data() + offset, rows, cols, ld > 0 ? ld : 1};
  }
  void fill_random(RngStream& rng, T lo = T(-1), T hi = T(1)) {
    for (auto& v : storage)
      v = static_cast<T>(rng.uniform(static_cast<float>(lo), static_cast<float>(hi)));
  }
  void fill(T v) {
    for (auto& s : storage) s = v;
  }
  ConstMat<T> cview() const { return view; }
};

template <class T>
constexpr T eps() {
  return std::numeric_limits<T>::epsilon();
}

// Bound on |fast - ref| for a dot product of length k whose terms have absolute sum abs_sum:
// both sides carry at most about k·eps·abs_sum of rounding (summation in different orders).
template <class T>
T dot_tolerance(Index k, T abs_sum) {
  return T(2) * static_cast<T>(k + 2) * eps<T>() * (abs_sum + T(1e-30));
}

inline std::string type_name(bool dbl) {
  return dbl ? "f64" : "f32";
}

}  // namespace shoal::kernels::testing
