#include "shoal/layers/dropout.h"

#include <algorithm>
#include <array>
#include <cmath>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace shoal::layers {
namespace {

// keep iff (word >> 8) >= threshold  ⇔  u01(word) >= p, since u01(w) = (w >> 8) · 2⁻²⁴ exactly.
uint32_t keep_threshold(double p) {
  return static_cast<uint32_t>(std::ceil(p * 0x1.0p24));
}

// Philox4x32-10 for kBlocks consecutive counters at once, bit-identical to Philox::block
// (counter (step, low 32 bits of the block index, stream), key = seed). The scalar generator
// spends its time on a chain of dependent multiplies per block; SIMD runs 8 blocks side by side.
constexpr int kBlocks = 16;
constexpr Index kChunk = 4 * kBlocks;  // elements per generated chunk

[[maybe_unused]] void philox_chunk_scalar(uint64_t seed, uint64_t stream, uint64_t step,
                                          uint64_t first_block, uint32_t* words) {
  const Philox philox(seed, stream);
  for (int i = 0; i < kBlocks; ++i) {
    const auto w = philox.block(step, first_block + static_cast<uint64_t>(i));
    std::copy(w.begin(), w.end(), words + 4 * i);
  }
}

#if defined(__AVX2__)
// 8 blocks per vector: lane i of c0..c3 is word 0..3 of block first_block + i. The 32×32→64
// multiply runs on even and odd lanes separately (vpmuludq) and is blended back.
void philox_chunk(uint64_t seed, uint64_t stream, uint64_t step, uint64_t first_block,
                  uint32_t* words) {
  static_assert(kBlocks % 8 == 0);
  const __m256i m0 = _mm256_set1_epi64x(0xD2511F53), m1 = _mm256_set1_epi64x(0xCD9E8D57);
  auto mulhilo = [](__m256i a, __m256i m, __m256i& hi) {
    const __m256i even = _mm256_mul_epu32(a, m);
    const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
    hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
    return _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  };
  for (int g = 0; g < kBlocks; g += 8) {
    const auto b = static_cast<uint32_t>(first_block + static_cast<uint64_t>(g));
    __m256i c0 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(step)));
    __m256i c1 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(step >> 32)));
    __m256i c2 = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(b)),
                                  _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256i c3 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream)));
    auto k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {
      __m256i hi0, hi1;
      const __m256i lo0 = mulhilo(c0, m0, hi0);
      const __m256i lo1 = mulhilo(c2, m1, hi1);
      c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(static_cast<int>(k0)));
      c1 = lo1;
      c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(static_cast<int>(k1)));
      c3 = lo0;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    alignas(32) uint32_t w[4][8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(w[0]), c0);
    _mm256_store_si256(reinterpret_cast<__m256i*>(w[1]), c1);
    _mm256_store_si256(reinterpret_cast<__m256i*>(w[2]), c2);
    _mm256_store_si256(reinterpret_cast<__m256i*>(w[3]), c3);
    for (int i = 0; i < 8; ++i)
      for (int l = 0; l < 4; ++l) words[4 * (g + i) + l] = w[l][i];
  }
}
#else
void philox_chunk(uint64_t seed, uint64_t stream, uint64_t step, uint64_t first_block,
                  uint32_t* words) {
  philox_chunk_scalar(seed, stream, step, first_block, words);
}
#endif

// out(r, c) = keep(r, c) ? in(r, c) · scale : 0 over the rows [row0, row0 + in.rows) of the
// logical [·, F] tensor. Words are generated kChunk elements at a time along the flat index,
// across row boundaries, so each Philox block is computed once whatever F and ld are.
template <class T>
void apply_mask(uint64_t seed, uint64_t stream, uint64_t step, uint32_t threshold, T scale,
                Index row0, ConstMat<T> in, MatView<T> out) {
  const Index f = in.cols;
  alignas(64) uint32_t words[kChunk];
  uint64_t chunk_begin = 0, chunk_end = 0;  // flat element range held in words
  for (Index r = 0; r < in.rows; ++r) {
    const T* src = in.row(r);
    T* dst = out.row(r);
    const auto e0 = static_cast<uint64_t>((row0 + r) * f);
    Index c = 0;
    while (c < f) {
      const uint64_t e = e0 + static_cast<uint64_t>(c);
      if (e < chunk_begin || e >= chunk_end) {
        chunk_begin = e / 4 * 4;
        chunk_end = chunk_begin + kChunk;
        philox_chunk(seed, stream, step, e / 4, words);
      }
      const Index n = std::min<Index>(f - c, static_cast<Index>(chunk_end - e));
      const uint32_t* w = words + (e - chunk_begin);
      for (Index j = 0; j < n; ++j)
        dst[c + j] = (w[j] >> 8) >= threshold ? src[c + j] * scale : T(0);
      c += n;
    }
  }
}

template <class T>
void copy_mat(ConstMat<T> in, MatView<T> out) {
  if (in.data == out.data && in.ld == out.ld) return;
  for (Index r = 0; r < in.rows; ++r) std::copy_n(in.row(r), in.cols, out.row(r));
}

}  // namespace

template <class T>
void Dropout<T>::plan(Planner&, Index) {
  SHOAL_CHECK(cfg.p >= 0.0 && cfg.p < 1.0, "Dropout p must be in [0, 1), got {}", cfg.p);
}

template <class T>
void Dropout<T>::forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index row0) {
  SHOAL_DCHECK(x.rows == y.rows && x.cols == y.cols);
  if (!ctx.training || cfg.p == 0.0) return copy_mat<T>(x, y);
  apply_mask<T>(ctx.seed, cfg.stream, ctx.step, keep_threshold(cfg.p),
                static_cast<T>(1.0 / (1.0 - cfg.p)), row0, x, y);
}

template <class T>
void Dropout<T>::backward(const Ctx& ctx, ConstMat<T>, ConstMat<T>, ConstMat<T> dy, MatView<T> dx,
                          Index row0) {
  SHOAL_DCHECK(dy.rows == dx.rows && dy.cols == dx.cols);
  if (!ctx.training || cfg.p == 0.0) return copy_mat<T>(dy, dx);
  apply_mask<T>(ctx.seed, cfg.stream, ctx.step, keep_threshold(cfg.p),
                static_cast<T>(1.0 / (1.0 - cfg.p)), row0, dy, dx);
}

template <class T>
bool Dropout<T>::kept(const Ctx& ctx, Index cols, Index r, Index c) const {
  const auto e = static_cast<uint64_t>(r * cols + c);
  const uint32_t w = Philox(ctx.seed, cfg.stream).block(ctx.step, e / 4)[e % 4];
  return (w >> 8) >= keep_threshold(cfg.p);
}

template struct Dropout<float>;
template struct Dropout<double>;

}  // namespace shoal::layers
