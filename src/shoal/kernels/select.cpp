#include "shoal/kernels/select.h"

#include <array>
#include <bit>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace shoal::kernels {

Index select_range(Index n, int32_t lo, int32_t hi, const int32_t* keys, const int32_t* others,
                   const int32_t* ctx_rows, const float* labels, int32_t* out_keys,
                   int32_t* out_others, int32_t* out_ctx_rows, float* out_labels) {
  Index m = 0, k = 0;
#if defined(__AVX2__)
  // Per 8-bit lane mask: the selected lanes' indices, in order, one per nibble.
  static constexpr auto kPack = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t mask = 0; mask < 256; ++mask) {
      uint32_t packed = 0, j = 0;
      for (uint32_t l = 0; l < 8; ++l)
        if ((mask >> l) & 1u) packed |= l << (4 * j++);
      t[mask] = packed;
    }
    return t;
  }();
  const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  const __m256i below = _mm256_set1_epi32(lo - 1), last = _mm256_set1_epi32(hi - 1);
  for (; k + 8 <= n; k += 8) {
    const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(keys + k));
    const __m256i in =
        _mm256_andnot_si256(_mm256_cmpgt_epi32(u, last), _mm256_cmpgt_epi32(u, below));
    const auto mask = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(in)));
    // permutevar8x32 reads only each lane's low three bits: no mask after the shift.
    const __m256i perm =
        _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(kPack[mask])), shifts);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out_keys + m),
                        _mm256_permutevar8x32_epi32(u, perm));
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(out_others + m),
        _mm256_permutevar8x32_epi32(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(others + k)), perm));
    if (ctx_rows != nullptr)
      _mm256_storeu_si256(
          reinterpret_cast<__m256i*>(out_ctx_rows + m),
          _mm256_permutevar8x32_epi32(
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ctx_rows + k)), perm));
    _mm256_storeu_ps(out_labels + m, _mm256_permutevar8x32_ps(_mm256_loadu_ps(labels + k), perm));
    m += std::popcount(mask);
  }
#endif
  for (; k < n; ++k) {
    const int32_t u = keys[k];
    out_keys[m] = u;
    out_others[m] = others[k];
    if (ctx_rows != nullptr) out_ctx_rows[m] = ctx_rows[k];
    out_labels[m] = labels[k];
    m += u >= lo && u < hi ? 1 : 0;
  }
  return m;
}

}  // namespace shoal::kernels
