#include "shoal/layers/embedding.h"

#include <algorithm>
#include <limits>
#include "shoal/core/copy_row.h"

namespace shoal::layers {

template <class T>
void Embedding<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.num_embeddings > 0 && cfg.embedding_dim > 0,
              "Embedding needs num_embeddings > 0 and embedding_dim > 0, got {} and {}",
              cfg.num_embeddings, cfg.embedding_dim);
  SHOAL_CHECK(cfg.num_embeddings <= std::numeric_limits<Id>::max(),
              "Embedding num_embeddings {} does not fit int32 ids", cfg.num_embeddings);
  SHOAL_CHECK(max_rows > 0 && max_rows <= std::numeric_limits<uint32_t>::max(),
              "Embedding max_rows must be in [1, 2^32), got {}", max_rows);
  SHOAL_CHECK(cfg.init_std >= 0, "Embedding init_std must be >= 0, got {}", cfg.init_std);
  planner.param(p.weight, "weight", {cfg.num_embeddings, cfg.embedding_dim},
                ParamKind::kSparseRows);
  planner.buffer(rows, Region::kActivationGrads, "touched_rows", {max_rows});
  planner.buffer(row_grad, Region::kActivationGrads, "touched_grad", {max_rows, cfg.embedding_dim});
  planner.buffer(keys, Region::kScratch, "sort_keys", {2 * max_rows});
}

template <class T>
void Embedding<T>::init(RngStream& rng) {
  for (T& w : p.weight.value) w = static_cast<T>(cfg.init_std * rng.normal());
}

template <class T>
void Embedding<T>::forward(const Ctx&, std::span<const Id> ids, MatView<T> y) {
  const Index d = cfg.embedding_dim;
  SHOAL_DCHECK(y.cols == d && y.rows == static_cast<Index>(ids.size()));
  const ConstMat<T> w = p.weight.value.mat();
  for (Index n = 0; n < y.rows; ++n) {
    const Id id = ids[static_cast<size_t>(n)];
    SHOAL_DCHECK(id >= 0 && id < cfg.num_embeddings);
    copy_row(w.row(id), d, y.row(n));
  }
}

template <class T>
void Embedding<T>::backward(const Ctx&, std::span<const Id> ids, ConstMat<T> dy) {
  const Index d = cfg.embedding_dim;
  const auto n = static_cast<Index>(ids.size());
  SHOAL_DCHECK(dy.cols == d && dy.rows == n && 2 * n <= keys.view.numel());
  // Sorting (id, position) pairs groups equal ids and orders each group by position: no
  // allocation, no U-sized map, and the summation order is fixed. The keys are generated in
  // position order, so a stable LSD radix sort on the id bits alone (8-bit digits, as many as
  // U needs: 2 passes for U ≤ 65536) gives the same order as sorting the whole key, in
  // O(N) instead of O(N log N) (this runs 4 times per step in NCF).
  uint64_t* k = keys.view.data;
  uint64_t* tmp = keys.view.data + n;
  for (Index i = 0; i < n; ++i) {
    const Id id = ids[static_cast<size_t>(i)];
    SHOAL_DCHECK(id >= 0 && id < cfg.num_embeddings);
    k[i] = (static_cast<uint64_t>(static_cast<uint32_t>(id)) << 32) | static_cast<uint64_t>(i);
  }
  const auto max_id = static_cast<uint64_t>(cfg.num_embeddings - 1);
  for (int shift = 32; shift < 64 && (max_id >> (shift - 32)) != 0; shift += 8) {
    uint32_t count[257] = {};
    for (Index i = 0; i < n; ++i) ++count[((k[i] >> shift) & 0xff) + 1];
    for (int b = 0; b < 256; ++b) count[b + 1] += count[b];
    for (Index i = 0; i < n; ++i) tmp[count[(k[i] >> shift) & 0xff]++] = k[i];
    std::swap(k, tmp);
  }
  Id* out_ids = rows.view.data;
  const MatView<T> g = row_grad.mat();
  Index count = 0;
  for (Index i = 0; i < n; ++i) {
    const auto id = static_cast<Id>(k[i] >> 32);
    const T* src = dy.row(static_cast<Index>(k[i] & 0xffffffffu));
    if (count == 0 || out_ids[count - 1] != id) {
      out_ids[count] = id;
      copy_row(src, d, g.row(count));
      ++count;
    } else {
      T* dst = g.row(count - 1);
      for (Index j = 0; j < d; ++j) dst[j] += src[j];
    }
  }
  n_touched = count;
}

template <class T>
typename Embedding<T>::TouchedRows Embedding<T>::touched_rows() const {
  return {std::span<const Id>(rows.view.data, static_cast<size_t>(n_touched)),
          ConstMat<T>(row_grad.mat().rows_block(0, n_touched))};
}

template struct Embedding<float>;
template struct Embedding<double>;

}  // namespace shoal::layers
