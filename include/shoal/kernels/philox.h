// Philox-4x32-10 (Random123's, bit for bit as shoal::Philox::block of core/rng.h) on many
// counters at once. Dropout masks and the NCF sampler's negatives, buckets and shuffles draw
// tens of millions of blocks per epoch; the scalar generator spends its time on a chain of
// dependent multiplies per block, so the fast kernels run kPhiloxLanes blocks side by side in
// vector registers. Each has a *_ref twin over Philox::block, and they are bitwise equal.
#pragma once

#include <cstddef>
#include <cstdint>

namespace shoal::kernels {

inline constexpr size_t kPhiloxLanes = 32;

// Lane l's counter is (ctr[0][l], ctr[1][l], ctr[2][l], ctr[3][l]) and its key (seed low, seed
// high); out[w][l] is word w of lane l's block. With Philox(seed, stream).block(a, b) the
// counter is (a low, a high, b low, stream low).
void philox4x32_lanes(uint64_t seed, const uint32_t (&ctr)[4][kPhiloxLanes],
                      uint32_t (&out)[4][kPhiloxLanes]);
void philox4x32_lanes_ref(uint64_t seed, const uint32_t (&ctr)[4][kPhiloxLanes],
                          uint32_t (&out)[4][kPhiloxLanes]);

// The kPhiloxLanes consecutive blocks Philox(seed, stream).block(a, b0 + i), i in
// [0, kPhiloxLanes), as words[4·i + w] (the element order of a counter-based stream). The
// block index wraps in 32 bits, as Philox::block keeps only b's low word.
void philox4x32_blocks(uint64_t seed, uint64_t stream, uint64_t a, uint64_t b0,
                       uint32_t (&words)[4 * kPhiloxLanes]);
void philox4x32_blocks_ref(uint64_t seed, uint64_t stream, uint64_t a, uint64_t b0,
                           uint32_t (&words)[4 * kPhiloxLanes]);

}  // namespace shoal::kernels
