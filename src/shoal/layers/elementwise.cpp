#include "shoal/layers/elementwise.h"

#include <algorithm>

namespace shoal::layers {
namespace {

template <class T>
bool same_shape(ConstMat<T> a, ConstMat<T> b) {
  return a.rows == b.rows && a.cols == b.cols;
}

template <class T>
void copy_into(ConstMat<T> in, MatView<T> out) {
  if (out.data == nullptr || (out.data == in.data && out.ld == in.ld)) return;
  for (Index r = 0; r < in.rows; ++r) std::copy_n(in.row(r), in.cols, out.row(r));
}

}  // namespace

template <class T>
void Add<T>::forward(const Ctx&, ConstMat<T> a, ConstMat<T> b, MatView<T> y) {
  SHOAL_DCHECK(same_shape<T>(a, b) && same_shape<T>(a, y));
  for (Index r = 0; r < a.rows; ++r) {
    const T* ar = a.row(r);
    const T* br = b.row(r);
    T* yr = y.row(r);
    for (Index c = 0; c < a.cols; ++c) yr[c] = ar[c] + br[c];
  }
}

template <class T>
void Add<T>::backward(const Ctx&, ConstMat<T>, ConstMat<T>, ConstMat<T>, ConstMat<T> dy,
                      MatView<T> da, MatView<T> db) {
  SHOAL_DCHECK(da.data == nullptr || same_shape<T>(dy, da));
  SHOAL_DCHECK(db.data == nullptr || same_shape<T>(dy, db));
  copy_into<T>(dy, da);
  copy_into<T>(dy, db);
}

template <class T>
void Mul<T>::forward(const Ctx&, ConstMat<T> a, ConstMat<T> b, MatView<T> y) {
  SHOAL_DCHECK(same_shape<T>(a, b) && same_shape<T>(a, y));
  for (Index r = 0; r < a.rows; ++r) {
    const T* ar = a.row(r);
    const T* br = b.row(r);
    T* yr = y.row(r);
    for (Index c = 0; c < a.cols; ++c) yr[c] = ar[c] * br[c];
  }
}

template <class T>
void Mul<T>::backward(const Ctx&, ConstMat<T> a, ConstMat<T> b, ConstMat<T>, ConstMat<T> dy,
                      MatView<T> da, MatView<T> db) {
  SHOAL_DCHECK(same_shape<T>(a, b) && same_shape<T>(a, dy));
  SHOAL_DCHECK(da.data == nullptr || same_shape<T>(dy, da));
  SHOAL_DCHECK(db.data == nullptr || same_shape<T>(dy, db));
  for (Index r = 0; r < dy.rows; ++r) {
    const T* ar = a.row(r);
    const T* br = b.row(r);
    const T* gr = dy.row(r);
    T* dar = da.data ? da.row(r) : nullptr;
    T* dbr = db.data ? db.row(r) : nullptr;
    for (Index c = 0; c < dy.cols; ++c) {
      const T g = gr[c];  // read first: da or db may alias dy
      if (dar) dar[c] = g * br[c];
      if (dbr) dbr[c] = g * ar[c];
    }
  }
}

template struct Add<float>;
template struct Add<double>;
template struct Mul<float>;
template struct Mul<double>;

}  // namespace shoal::layers
