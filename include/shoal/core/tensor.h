// Non-owning views over arena memory. A view never allocates and never frees.
//
// Shape: up to 4 dims, row-major. TensorView<T>: contiguous data of a Shape. MatView<T>: a 2-D
// window with a leading dimension (elements between row starts), so a column block of a wider
// matrix is a view, not a copy: this is how concat works (each producer writes into its
// column block of the consumer's input).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "shoal/core/error.h"

namespace shoal {

using Index = int64_t;

struct Shape {
  static constexpr int kMaxRank = 4;
  std::array<Index, kMaxRank> dims{};
  int rank = 0;

  Shape() = default;
  Shape(std::initializer_list<Index> d);
  Index operator[](int i) const { return dims[static_cast<size_t>(i)]; }
  Index numel() const;
  bool operator==(const Shape& o) const;
  std::string str() const;  // "[2, 3]"
};

template <class T>
struct MatView {
  T* data = nullptr;
  Index rows = 0;
  Index cols = 0;
  Index ld = 0;  // elements from one row start to the next; >= cols

  MatView() = default;
  MatView(T* d, Index r, Index c) : data(d), rows(r), cols(c), ld(c) {}
  MatView(T* d, Index r, Index c, Index l) : data(d), rows(r), cols(c), ld(l) {}
  // A view of T is also a view of const T.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T>>>
  MatView(const MatView<U>& o) : data(o.data), rows(o.rows), cols(o.cols), ld(o.ld) {}

  T& operator()(Index r, Index c) const { return data[r * ld + c]; }
  T* row(Index r) const { return data + r * ld; }
  bool contiguous() const { return ld == cols || rows <= 1; }
  Index numel() const { return rows * cols; }
  // Rows [r0, r0 + n): a sub-batch.
  MatView rows_block(Index r0, Index n) const { return {data + r0 * ld, n, cols, ld}; }
  // Columns [c0, c0 + n): a strided view used for concat and split.
  MatView cols_block(Index c0, Index n) const { return {data + c0, rows, n, ld}; }
};

template <class T>
using ConstMat = MatView<const T>;

template <class T>
struct TensorView {
  T* data = nullptr;
  Shape shape;

  TensorView() = default;
  TensorView(T* d, Shape s) : data(d), shape(s) {}
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T>>>
  TensorView(const TensorView<U>& o) : data(o.data), shape(o.shape) {}

  Index numel() const { return shape.numel(); }
  T* begin() const { return data; }
  T* end() const { return data + numel(); }
  // The same memory seen as [rows, numel / rows].
  MatView<T> mat(Index rows) const;
  // Leading dim stays, the rest is flattened: [d0, d1*d2*...].
  MatView<T> mat() const { return mat(shape.rank == 0 ? 1 : shape[0]); }
};

template <class T>
MatView<T> TensorView<T>::mat(Index rows) const {
  const Index n = numel();
  SHOAL_CHECK(rows > 0 && n % rows == 0, "cannot view tensor {} as {} rows", shape.str(), rows);
  return {data, rows, n / rows};
}

// Shape checks used when a model is planned (never inside kernels).
void check_shape(const Shape& actual, const Shape& expected, const char* what);

}  // namespace shoal
