// CategoricalEmbedding: one exogenous stream (historical, future or static features) whose
// categorical channels are replaced by learned embeddings, as neuralforecast's BaseModel feeds a
// model categorical exogenous features (`_embed_stream`, `_lookup_embedding`).
//
//   x [R, C, P] → y [R, C', P],  C' = (C − K) + Σ_k D_k
//   y[r, 0 .. C−K)     = x's continuous channels, in their order
//   y[r, C−K + o_k + d] = W_k[x[r, c_k, p], d]   for each categorical column k (channel c_k,
//                         table W_k [U_k + 1, D_k], o_k = Σ_{j<k} D_j), in the columns' order
// Legend: R rows (windows, or series for a shared static table), C channels of the stream,
// P positions per channel (time × series for a temporal stream, 1 for a static one), K
// categorical columns, U_k a column's cardinality, D_k its embedding width.
//
// Codes are the values of a categorical channel: integers in [0, U_k], 0 meaning a category the
// training data did not have (neuralforecast's vocabulary: index 0 is the out-of-vocabulary
// slot). Code 0 does not read its own (untrained) row: it reads the mean of rows 1..U_k, so an
// unseen category gets the average learned embedding, and its gradient spreads over those rows
// (each gets 1/U_k of it).
//
// Init: each table ~ N(0, 1) (nn.Embedding's), tables in the columns' order; a torch-replica
// stream draws them as torch's normal_ does.
//
// Backward: ∂L/∂W_k accumulates (the gradient rule); the codes are not differentiable and the
// continuous channels' gradient is the caller's (dy's first C − K channels).
#pragma once

#include <string_view>
#include <vector>

#include "shoal/core/arena.h"
#include "shoal/core/rng.h"

namespace shoal::layers {

struct CategoricalColumn {
  Index channel = 0;      // c_k: its channel in the stream
  Index cardinality = 0;  // U_k: its categories (codes 1..U_k; 0: unseen)
  Index dim = 0;          // D_k
};

// A stream's channels and which of them are categorical.
struct CategoricalStream {
  Index channels = 0;                      // C
  std::vector<CategoricalColumn> columns;  // in the order their embeddings are laid out
  // C': the channels once embedded.
  Index out_channels() const {
    Index c = channels - Index(columns.size());
    for (const CategoricalColumn& col : columns) c += col.dim;
    return c;
  }
};

template <class T>
struct CategoricalEmbedding {
  using Config = CategoricalStream;

  Config cfg;
  std::vector<Param<T>> tables;            // W_k [U_k + 1, D_k], named "<k>.weight"
  Buffer<T> oov;                           // [K, max D] the mean rows of the last forward
  std::vector<Index> continuous_channels;  // the C − K others, in order

  explicit CategoricalEmbedding(Config config);

  Index out_channels() const { return cfg.out_channels(); }
  Index continuous() const { return Index(continuous_channels.size()); }
  bool empty() const { return cfg.columns.empty(); }

  template <class F>
  void for_each_param(F&& f) {
    for (size_t k = 0; k < tables.size(); ++k) f(std::to_string(k) + ".weight", tables[k]);
  }
  void plan(Planner& planner);
  void init(RngStream& rng);
  // x [rows, C, positions] → y [rows, C', positions], both contiguous. Throws shoal::Error on a
  // code outside [0, U_k].
  void forward(const T* x, Index rows, Index positions, T* y);
  // dy [rows, C', positions]: adds ∂L/∂W_k for the codes of x.
  void backward(const T* x, Index rows, Index positions, const T* dy);
};

// neuralforecast's embedding width for a column of `cardinality` categories: an integer ("8"),
// or a rule: "fastai" min(50, ⌈1.6·U^0.56⌉), "sqrt" min(50, ⌈√U⌉), "half" min(50, ⌊(U+1)/2⌋).
Index categorical_embedding_dim(std::string_view rule, Index cardinality);

}  // namespace shoal::layers
