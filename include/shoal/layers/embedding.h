// Embedding: y[n, :] = W[ids[n], :], PyTorch's nn.Embedding (no padding_idx, no max_norm).
// Shapes: ids [N] (int32, each in [0, U)), W [U, D], y [N, D] (y may be a column block of a
// wider buffer, ld > D). Legend: N batch rows, U rows of the table, D embedding width.
// Init: W ~ N(0, init_std²); PyTorch's default is init_std = 1, NCF uses 0.01.
//
// Ids are int32: tables beyond 2³¹ rows do not fit a CPU model anyway, and a batch's sort keys
// pack (id, position) into one uint64. Readers validate ids; here they are only DCHECKed.
//
// The table is a ParamKind::kSparseRows parameter: it has no dense gradient. backward keeps,
// in its own planned buffers, the distinct ids of the batch in ascending order and their
// summed row gradients:  G[k, :] = Σ_{n : ids[n] = rows[k]} dy[n, :]  (rows [K], G [K, D],
// K ≤ N). The sums run over n in ascending order, so the result is deterministic. touched_rows()
// exposes them to the sparse optimizer; each backward replaces the previous batch's set (the
// sparse counterpart of "parameter gradients accumulate" is: one backward per step).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"

namespace shoal::layers {

template <class T>
struct Embedding {
  using Id = int32_t;

  struct Config {
    Index num_embeddings = 0;  // U
    Index embedding_dim = 0;   // D
    double init_std = 1.0;     // N(0, init_std²) init
  };
  struct Params {
    Param<T> weight;  // [U, D], kSparseRows
  };
  // The rows a backward touched: ids ascending and distinct, grad row k belongs to ids[k].
  struct TouchedRows {
    std::span<const Id> ids;  // [K]
    ConstMat<T> grad;         // [K, D]
  };

  Config cfg;
  Params p;
  Buffer<Id> rows;        // [N] touched ids of the last backward (activation grads)
  Buffer<T> row_grad;     // [N, D] their summed gradients (activation grads)
  Buffer<uint64_t> keys;  // [2N] scratch: (id << 32 | position), radix-sorted by id
  Index n_touched = 0;

  explicit Embedding(Config c) : cfg(c) {}

  template <class F>
  void for_each_param(F&& f) {
    f(std::string_view("weight"), p.weight);
  }

  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  void forward(const Ctx& ctx, std::span<const Id> ids, MatView<T> y);
  // No input gradient (ids are not differentiable); fills the touched rows.
  void backward(const Ctx& ctx, std::span<const Id> ids, ConstMat<T> dy);
  TouchedRows touched_rows() const;
};

}  // namespace shoal::layers
