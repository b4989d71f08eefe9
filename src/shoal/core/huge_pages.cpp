#include "shoal/core/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace shoal {

void* huge_alloc(size_t bytes) {
  if (bytes < kHugePageBytes) return ::operator new(bytes);
  // Map one huge page more than needed, then unmap the unaligned head and the tail, so the
  // block starts on a huge-page boundary and every whole huge page of it can be backed by one.
  const size_t mapped = bytes + kHugePageBytes;
  void* raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t start = (base + kHugePageBytes - 1) & ~(uintptr_t{kHugePageBytes} - 1);
  if (start > base) munmap(raw, start - base);
  const uintptr_t end = base + mapped, used_end = start + bytes;
  const uintptr_t tail = (used_end + 4095) & ~uintptr_t{4095};
  if (end > tail) munmap(reinterpret_cast<void*>(tail), end - tail);
  auto* p = reinterpret_cast<void*>(start);
  // Advice only: without THP (or with it "never") the mapping keeps ordinary pages.
  madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

void huge_free(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  if (bytes < kHugePageBytes) {
    ::operator delete(p);
    return;
  }
  munmap(p, bytes);
}

}  // namespace shoal
