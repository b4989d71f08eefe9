// Memory for large arrays read at random rows (the NCF context table: 3.6M positives × 21
// floats, ~300 MB; the sampler's epoch arrays): requests of kHugePageBytes or more are mapped
// fresh, aligned to a huge page, with transparent huge pages requested (madvise), so that a
// random row costs a cache miss and not also a TLB miss and page walk (4 KiB pages give the
// L2 TLB 8 MB of reach on Zen 3). With THP "madvise" the NCF trainer's context gather
// (profiler zone data.batch, one full-scale epoch) took 0.9-1.2 s instead of 1.5-1.7 s. Smaller
// requests use operator new. Where THP is off, the memory has ordinary pages: only slower.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace shoal {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Raw blocks: `bytes` ≥ kHugePageBytes comes from mmap (huge-page aligned, advised), else from
// operator new. Throws std::bad_alloc. huge_free must get the same `bytes`.
void* huge_alloc(size_t bytes);
void huge_free(void* p, size_t bytes) noexcept;

template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  explicit HugePageAllocator(const HugePageAllocator<U>& /*other*/) {}
  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(huge_alloc(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept { huge_free(p, n * sizeof(T)); }
  friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) { return true; }
};

template <class T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace shoal
