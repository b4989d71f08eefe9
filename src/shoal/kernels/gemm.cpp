// Fast row-major GEMM: libxsmm JIT kernels for the small shapes a Linear has, OpenBLAS
// (single-threaded) where libxsmm has no kernel or loses. The mapping of each row-major form
// onto libxsmm's column-major kernels is in xsmm_backend.h and docs/kernels.md.
#include <cstring>
#include <limits>

#include "shoal/kernels/gemm.h"
#include "xsmm_backend.h"

namespace shoal::kernels {

namespace {

bool fits_i32(Index v) {
  return v >= 0 && v <= std::numeric_limits<int32_t>::max();
}

// Row-major C[m,n] = op(A)·op(B) (+C) for NN (pack == false, b as given) or TN, through the
// swapped column-major libxsmm kernel. Returns false if libxsmm has no kernel for it.
template <class T>
bool xsmm_rowmajor(bool ta, Index m, Index n, Index k, const T* a, Index lda, const T* b, Index ldb,
                   bool beta_one, T* c, Index ldc) {
  const detail::XsmmKey key{static_cast<int32_t>(n),   static_cast<int32_t>(m),
                            static_cast<int32_t>(k),   static_cast<int32_t>(ldb),
                            static_cast<int32_t>(lda), static_cast<int32_t>(ldc),
                            static_cast<uint8_t>(ta),  static_cast<uint8_t>(beta_one)};
  return detail::xsmm_run<T>(key, b, a, c);
}

template <class T>
bool try_xsmm(Trans ta, Trans tb, Index m, Index n, Index k, T alpha, const T* a, Index lda,
              const T* b, Index ldb, T beta, T* c, Index ldc) {
  if (alpha != T(1) || (beta != T(0) && beta != T(1))) return false;
  if (ta == Trans::kYes && tb == Trans::kYes) return false;
  for (Index v : {m, n, k, lda, ldb, ldc})
    if (!fits_i32(v)) return false;
  const bool beta_one = beta == T(1);
  if (tb == Trans::kNo && ta == Trans::kNo)
    return xsmm_rowmajor<T>(false, m, n, k, a, lda, b, ldb, beta_one, c, ldc);
  if (tb == Trans::kNo) {
    // TN: libxsmm 1.17's transposed-B kernels run at about half the speed of its NN kernels on
    // AVX2 (docs/kernels.md), so pack op(A) = Aᵀ [m, k] and run NN.
    T* at = detail::scratch_as<T>(detail::ScratchSlot::kPack, m * k);
    detail::transpose<T>(a, k, m, lda, at, k);
    return xsmm_rowmajor<T>(false, m, n, k, at, k, b, ldb, beta_one, c, ldc);
  }
  // NT: libxsmm 1.17 cannot transpose its A operand (our B), so pack Bᵀ [k, n] once per call.
  // The pack costs n·k moves against m·n·k FMAs, so it pays for itself when m is not tiny.
  T* bt = detail::scratch_as<T>(detail::ScratchSlot::kPack, n * k);
  detail::transpose<T>(b, n, k, ldb, bt, n);
  return xsmm_rowmajor<T>(false, m, n, k, a, lda, bt, n, beta_one, c, ldc);
}

}  // namespace

GemmBackend gemm_auto_backend(Trans ta, Trans tb, Index m, Index n, Index k) {
  if (ta == Trans::kYes && tb == Trans::kYes) return GemmBackend::kBlas;
  // libxsmm streams the row dimension m through a kernel that keeps a panel of op(B) (n·k) hot;
  // once that panel outgrows L2 or the product is large in every dimension, OpenBLAS's cache
  // blocking wins (measured in `shoal bench kernels`, see docs/kernels.md).
  if (n * k > (Index{1} << 16)) return GemmBackend::kBlas;
  if (m >= 512 && n >= 256 && k >= 256) return GemmBackend::kBlas;
  // TN with a long k (a weight gradient over the whole batch): libxsmm's kernels keep an
  // n×k panel that leaves L1, and OpenBLAS measured 1.5–2x faster (docs/kernels.md).
  if (ta == Trans::kYes && k >= 256) return GemmBackend::kBlas;
  // NT packs op(B); with very few rows the pack is not amortised.
  if (tb == Trans::kYes && m < 4 && n * k > 4096) return GemmBackend::kBlas;
  return GemmBackend::kXsmm;
}

template <class T>
void gemm(GemmBackend backend, Trans ta, Trans tb, Index m, Index n, Index k, T alpha, const T* a,
          Index lda, const T* b, Index ldb, T beta, T* c, Index ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (Index i = 0; i < m; ++i) {
      T* ci = c + i * ldc;
      if (beta == T(0))
        std::memset(ci, 0, sizeof(T) * static_cast<size_t>(n));
      else if (beta != T(1))
        for (Index j = 0; j < n; ++j) ci[j] *= beta;
    }
    return;
  }
  if (backend == GemmBackend::kAuto) backend = gemm_auto_backend(ta, tb, m, n, k);
  if (backend == GemmBackend::kXsmm &&
      try_xsmm<T>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
    return;
  detail::blas_gemm<T>(ta == Trans::kYes, tb == Trans::kYes, m, n, k, alpha, a, lda, b, ldb, beta,
                       c, ldc);
}

template <class T>
void gemm(Trans ta, Trans tb, Index m, Index n, Index k, T alpha, const T* a, Index lda, const T* b,
          Index ldb, T beta, T* c, Index ldc) {
  gemm<T>(GemmBackend::kAuto, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

#define SHOAL_INSTANTIATE(T)                                                                       \
  template void gemm<T>(Trans, Trans, Index, Index, Index, T, const T*, Index, const T*, Index, T, \
                        T*, Index);                                                                \
  template void gemm<T>(GemmBackend, Trans, Trans, Index, Index, Index, T, const T*, Index,        \
                        const T*, Index, T, T*, Index);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::kernels
