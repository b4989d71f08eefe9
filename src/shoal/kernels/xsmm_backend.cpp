#include "xsmm_backend.h"

// SHOAL_HAVE_XSMM (CMakeLists.txt): libxsmm's JIT kernels where it is built (x86); elsewhere
// xsmm_kernel answers "no kernel" and every caller takes its OpenBLAS or own-kernel path.
#if SHOAL_HAVE_XSMM
#include <libxsmm.h>
#endif

#include <array>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <new>
#include <string>

#include "blas_loader.h"
#include "shoal/kernels/isa.h"

namespace shoal::kernels::detail {

#if SHOAL_HAVE_XSMM
namespace {

// Whether the process started with `name` in its environment (/proc/self/environ is the
// environment at exec, whatever was set or unset since).
bool in_initial_environment(const char* name) {
  std::ifstream in("/proc/self/environ", std::ios::binary);
  const std::string prefix = std::string(name) + "=";
  for (std::string entry; std::getline(in, entry, '\0');)
    if (entry.compare(0, prefix.size(), prefix) == 0) return true;
  return false;
}

// libxsmm_init puts OMP_PROC_BIND=TRUE into the environment when no affinity variable is set.
// shoal pins its own threads and uses no OpenMP; left in place, the variable reaches every
// OpenMP runtime in the process and every process it starts, and each binds its first thread
// to the first CPU: PyTorch peers started side by side by `shoal bench`, or neuralforecast in
// Dask workers that ran a shoal fit, all on one CPU. Taken back out unless the user set it.
// (Loading libxsmm alone does not set it: after `import shoal` it is still unset.)
void undo_libxsmm_autopin() {
  if (!in_initial_environment("OMP_PROC_BIND")) unsetenv("OMP_PROC_BIND");
}

// SHOAL_ISA narrows libxsmm's JIT with the kernels (unless the user chose LIBXSMM_TARGET):
// "hsw" is its AVX2 code, "generic" no JIT at all (its JIT needs AVX), so shoal falls back to
// OpenBLAS for those GEMMs. Without SHOAL_ISA libxsmm reads the CPU's features itself.
void narrow_libxsmm_target() {
  if (!isa_narrowed() || in_initial_environment("LIBXSMM_TARGET")) return;
  switch (active_isa()) {
    case Isa::kAvx2:
      libxsmm_set_target_arch("hsw");
      break;
    case Isa::kSse4:
      libxsmm_set_target_arch("generic");
      break;
    case Isa::kAvx512:
    case Isa::kNeon:
      break;
  }
}

}  // namespace

void backend_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    libxsmm_init();
    undo_libxsmm_autopin();
    narrow_libxsmm_target();
  });
}
#else
void backend_init() {}
#endif

namespace {

template <class T>
struct XsmmCache {
  static constexpr int kSize = 128;  // power of two; probe up to kProbe slots
  static constexpr int kProbe = 8;
  struct Entry {
    XsmmKey key{};
    XsmmFn<T> fn = nullptr;
    bool used = false;
  };
  std::array<Entry, kSize> entries{};
  unsigned next_victim = 0;
};

uint32_t hash_key(const XsmmKey& k) {
  uint64_t h = 1469598103934665603ull;
  const int32_t parts[] = {k.m, k.n, k.k, k.lda, k.ldb, k.ldc, k.trans_b, k.beta_one};
  for (int32_t p : parts) h = (h ^ static_cast<uint32_t>(p)) * 1099511628211ull;
  return static_cast<uint32_t>(h ^ (h >> 32));
}

template <class T>
XsmmFn<T> dispatch_uncached(const XsmmKey& key) {
  backend_init();
#if !SHOAL_HAVE_XSMM
  static_cast<void>(key);
  return nullptr;
#else
  const libxsmm_blasint m = key.m, n = key.n, k = key.k;
  const libxsmm_blasint lda = key.lda, ldb = key.ldb, ldc = key.ldc;
  const int flags = key.trans_b ? LIBXSMM_GEMM_FLAG_TRANS_B : 0;
  const int prefetch = LIBXSMM_GEMM_PREFETCH_NONE;
  const T alpha = 1, beta = key.beta_one ? 1 : 0;
  if constexpr (sizeof(T) == 4) {
    return reinterpret_cast<XsmmFn<T> >(
        libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, &prefetch));
  } else {
    return reinterpret_cast<XsmmFn<T> >(
        libxsmm_dmmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, &prefetch));
  }
#endif
}

}  // namespace

template <class T>
XsmmFn<T> xsmm_kernel(const XsmmKey& key) {
  thread_local XsmmCache<T> cache;
  const uint32_t h = hash_key(key);
  for (int i = 0; i < XsmmCache<T>::kProbe; ++i) {
    auto& e = cache.entries[(h + static_cast<uint32_t>(i)) & (XsmmCache<T>::kSize - 1)];
    if (!e.used) {
      e = {key, dispatch_uncached<T>(key), true};
      return e.fn;
    }
    if (e.key == key) return e.fn;
  }
  // All probed slots hold other keys: evict one of them in turn.
  auto& e =
      cache.entries[(h + cache.next_victim++ % XsmmCache<T>::kProbe) & (XsmmCache<T>::kSize - 1)];
  e = {key, dispatch_uncached<T>(key), true};
  return e.fn;
}

template <class T>
bool xsmm_run(const XsmmKey& key, const T* a, const T* b, T* c) {
  if (key.m <= 0 || key.n <= 0) return true;
  if (key.k <= 0) {
    if (!key.beta_one)
      for (int32_t j = 0; j < key.n; ++j)
        std::memset(c + static_cast<Index>(j) * key.ldc, 0, sizeof(T) * static_cast<size_t>(key.m));
    return true;
  }
  XsmmFn<T> fn = xsmm_kernel<T>(key);
  if (!fn) return false;
  fn(a, b, c);
  return true;
}

template <class T>
void blas_gemm(bool ta, bool tb, Index m, Index n, Index k, T alpha, const T* a, Index lda,
               const T* b, Index ldb, T beta, T* c, Index ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == T(0)) {
    // BLAS scales C by beta here, but beta = 0 must also clear NaN; do both explicitly.
    for (Index i = 0; i < m; ++i)
      for (Index j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  const BlasApi& blas = blas_api();
  const auto cta = ta ? CblasTrans : CblasNoTrans;
  const auto ctb = tb ? CblasTrans : CblasNoTrans;
  const auto bi = [](Index v) { return static_cast<blasint>(v); };
  if (beta == T(0)) {
    // OpenBLAS with beta = 0 overwrites C, but clear it first so a NaN can never leak through
    // a kernel that multiplies instead.
    for (Index i = 0; i < m; ++i) std::memset(c + i * ldc, 0, sizeof(T) * static_cast<size_t>(n));
  }
  if constexpr (sizeof(T) == 4) {
    blas.sgemm(CblasRowMajor, cta, ctb, bi(m), bi(n), bi(k), alpha, a, bi(lda), b, bi(ldb), beta, c,
               bi(ldc));
  } else {
    blas.dgemm(CblasRowMajor, cta, ctb, bi(m), bi(n), bi(k), alpha, a, bi(lda), b, bi(ldb), beta, c,
               bi(ldc));
  }
}

namespace {

struct ScratchSet {
  struct Buf {
    void* p = nullptr;
    size_t cap = 0;
  };
  std::array<Buf, static_cast<size_t>(ScratchSlot::kCount)> bufs{};
  ~ScratchSet() {
    for (auto& b : bufs) ::operator delete (b.p, std::align_val_t{64});
  }
};

}  // namespace

void* scratch(ScratchSlot slot, size_t bytes) {
  thread_local ScratchSet set;
  auto& b = set.bufs[static_cast<size_t>(slot)];
  if (b.cap < bytes) {
    ::operator delete (b.p, std::align_val_t{64});
    // Round up so a slowly growing size does not reallocate every call.
    size_t cap = 4096;
    while (cap < bytes) cap *= 2;
    b.p = ::operator new (cap, std::align_val_t{64});
    b.cap = cap;
  }
  return b.p;
}

template <class T>
void transpose(const T* src, Index rows, Index cols, Index src_ld, T* dst, Index dst_ld) {
  constexpr Index kB = 16;
  for (Index r0 = 0; r0 < rows; r0 += kB) {
    const Index r1 = r0 + kB < rows ? r0 + kB : rows;
    for (Index c0 = 0; c0 < cols; c0 += kB) {
      const Index c1 = c0 + kB < cols ? c0 + kB : cols;
      for (Index c = c0; c < c1; ++c)
        for (Index r = r0; r < r1; ++r) dst[c * dst_ld + r] = src[r * src_ld + c];
    }
  }
}

#define SHOAL_INSTANTIATE(T)                                                                       \
  template XsmmFn<T> xsmm_kernel<T>(const XsmmKey&);                                               \
  template bool xsmm_run<T>(const XsmmKey&, const T*, const T*, T*);                               \
  template void blas_gemm<T>(bool, bool, Index, Index, Index, T, const T*, Index, const T*, Index, \
                             T, T*, Index);                                                        \
  template void transpose<T>(const T*, Index, Index, Index, T*, Index);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::kernels::detail
