// Counts heap allocations made by this process while a scope is armed. Include in exactly one
// translation unit of a test binary: it replaces the global operator new/delete, and (except
// under AddressSanitizer, which owns malloc) also malloc/calloc/realloc, so allocations inside
// shared libraries (libxsmm, OpenBLAS) count too.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace shoal::testing {

inline std::atomic<bool> g_alloc_armed{false};
inline std::atomic<int64_t> g_alloc_count{0};

inline void note_alloc() {
  if (g_alloc_armed.load(std::memory_order_relaxed))
    g_alloc_count.fetch_add(1, std::memory_order_relaxed);
}

// Counts allocations between construction and count().
class AllocCounter {
 public:
  AllocCounter() {
    g_alloc_count.store(0);
    g_alloc_armed.store(true);
  }
  ~AllocCounter() { g_alloc_armed.store(false); }
  int64_t count() const { return g_alloc_count.load(); }
};

}  // namespace shoal::testing
