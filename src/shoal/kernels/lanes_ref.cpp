// Plain-loop twins of the lane-interleaved kernels (lanes.h), and unpack.
#include <algorithm>

#include "shoal/core/error.h"
#include "shoal/kernels/lanes.h"

namespace shoal::kernels {

namespace {

// Lane l of group (r, c) of a contiguous [rows, cols, 8] buffer.
inline Index at(Index r, Index c, Index cols, Index l) {
  return (r * cols + c) * kLanes + l;
}

}  // namespace

void lanes_check_pack(std::span<const ConstMat<float>> src) {
  SHOAL_CHECK(!src.empty() && static_cast<Index>(src.size()) <= kLanes,
              "lanes_pack: 1 to {} sources, got {}", kLanes, src.size());
  for (const auto& m : src)
    SHOAL_CHECK(m.rows == src[0].rows && m.cols == src[0].cols,
                "lanes_pack: every source must be [{}, {}], got [{}, {}]", src[0].rows, src[0].cols,
                m.rows, m.cols);
}

void lanes_pack_ref(std::span<const ConstMat<float>> src, float* dst) {
  lanes_check_pack(src);
  const Index rows = src[0].rows, cols = src[0].cols;
  const auto models = static_cast<Index>(src.size());
  for (Index r = 0; r < rows; ++r)
    for (Index c = 0; c < cols; ++c) {
      float* g = dst + at(r, c, cols, 0);
      for (Index l = 0; l < models; ++l) g[l] = src[static_cast<size_t>(l)](r, c);
      std::fill(g + models, g + kLanes, 0.0f);
    }
}

void lanes_unpack(const float* src, std::span<const MatView<float>> dst) {
  SHOAL_CHECK(static_cast<Index>(dst.size()) <= kLanes, "lanes_unpack: at most {} targets, got {}",
              kLanes, dst.size());
  if (dst.empty()) return;
  const Index rows = dst[0].rows, cols = dst[0].cols;
  for (const auto& m : dst)
    SHOAL_CHECK(m.rows == rows && m.cols == cols,
                "lanes_unpack: every target must be [{}, {}], got [{}, {}]", rows, cols, m.rows,
                m.cols);
  for (size_t l = 0; l < dst.size(); ++l)
    for (Index r = 0; r < rows; ++r)
      for (Index c = 0; c < cols; ++c) dst[l](r, c) = src[at(r, c, cols, static_cast<Index>(l))];
}

void lanes_linear_forward_ref(const float* x, const float* w, const float* b, Index n, Index i,
                              Index o, bool relu, float* y) {
  for (Index l = 0; l < kLanes; ++l)
    for (Index r = 0; r < n; ++r)
      for (Index c = 0; c < o; ++c) {
        float acc = b != nullptr ? b[c * kLanes + l] : 0.0f;
        for (Index p = 0; p < i; ++p) acc += x[at(r, p, i, l)] * w[at(c, p, i, l)];
        y[at(r, c, o, l)] = relu ? std::max(acc, 0.0f) : acc;
      }
}

void lanes_linear_dx_ref(const float* dz, const float* w, Index n, Index i, Index o, float* dx) {
  for (Index l = 0; l < kLanes; ++l)
    for (Index r = 0; r < n; ++r)
      for (Index c = 0; c < i; ++c) {
        float acc = 0.0f;
        for (Index p = 0; p < o; ++p) acc += dz[at(r, p, o, l)] * w[at(p, c, i, l)];
        dx[at(r, c, i, l)] = acc;
      }
}

void lanes_linear_dw_ref(const float* dz, const float* x, Index n, Index i, Index o, float* dw,
                         bool accumulate) {
  for (Index l = 0; l < kLanes; ++l)
    for (Index r = 0; r < o; ++r)
      for (Index c = 0; c < i; ++c) {
        float acc = accumulate ? dw[at(r, c, i, l)] : 0.0f;
        for (Index p = 0; p < n; ++p) acc += dz[at(p, r, o, l)] * x[at(p, c, i, l)];
        dw[at(r, c, i, l)] = acc;
      }
}

void lanes_bias_grad_ref(const float* dz, Index n, Index o, float* db, bool accumulate) {
  for (Index l = 0; l < kLanes; ++l)
    for (Index c = 0; c < o; ++c) {
      float acc = accumulate ? db[c * kLanes + l] : 0.0f;
      for (Index r = 0; r < n; ++r) acc += dz[at(r, c, o, l)];
      db[c * kLanes + l] = acc;
    }
}

void lanes_linear_backward_ref(const float* x, const float* w, const float* y, bool relu,
                               const float* dy, float* dz, float* dx, float* dw, float* db, Index n,
                               Index i, Index o, bool accumulate) {
  const float* g = dy;
  if (relu) {
    // +0 where y ≤ 0, as PyTorch's threshold_backward.
    for (Index e = 0; e < lanes_size(n, o); ++e) dz[e] = y[e] > 0.0f ? dy[e] : 0.0f;
    g = dz;
  }
  if (db != nullptr) lanes_bias_grad_ref(g, n, o, db, accumulate);
  if (dx != nullptr) lanes_linear_dx_ref(g, w, n, i, o, dx);
  lanes_linear_dw_ref(g, x, n, i, o, dw, accumulate);
}

}  // namespace shoal::kernels
