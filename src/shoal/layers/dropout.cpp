#include "shoal/layers/dropout.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "shoal/kernels/philox.h"

namespace shoal::layers {
namespace {

// keep iff (word >> 8) >= threshold  ⇔  u01(word) >= p, since u01(w) = (w >> 8) · 2⁻²⁴ exactly.
uint32_t keep_threshold(double p) {
  return static_cast<uint32_t>(std::ceil(p * 0x1.0p24));
}

// Words come kernels::kPhiloxLanes blocks at a time (kernels/philox.h): the same words as
// Philox::block, generated side by side in vector registers.
constexpr Index kChunk = 4 * kernels::kPhiloxLanes;  // elements per generated chunk

// v if the word keeps its element, else +0: a mask of the bits rather than a branch, which a
// random keep bit would mispredict at rate p (a fifth of PatchTST's step at its defaults), and the
// same values as the branch (a dropped NaN or infinity is 0 too).
template <class T>
inline T kept_or_zero(T v, uint32_t word, uint32_t threshold) {
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  U bits;
  std::memcpy(&bits, &v, sizeof v);
  bits &= U(0) - U((word >> 8) >= threshold);
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

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
        kernels::philox4x32_blocks(seed, stream, step, e / 4, words);
      }
      const Index n = std::min<Index>(f - c, static_cast<Index>(chunk_end - e));
      const uint32_t* w = words + (e - chunk_begin);
      for (Index j = 0; j < n; ++j) dst[c + j] = kept_or_zero(src[c + j] * scale, w[j], threshold);
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
