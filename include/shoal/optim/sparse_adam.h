// Lazy Adam for ParamKind::kSparseRows tables (embeddings): torch.optim.SparseAdam semantics.
// Only the rows of this step's sparse gradient are touched: their m, v and values are updated,
// every other row (and its moments) is left exactly as it was. For a touched row, in
// SparseAdam's order:
//   m = m + (1 − β1)·(g − m)
//   v = v + (1 − β2)·(g·g − v)
//   p = p − (lr·√(1 − β2^t) / (1 − β1^t)) · m / (√v + eps)        (eps before bias correction)
// t is this optimizer's step count (begin_step() once per optimizer step, touched or not);
// PyTorch counts per table the steps in which the table had a gradient, which is the same
// number as long as every batch touches at least one row of the table (always, for
// embeddings looked up by every sample). See docs/optim.md.
//
// With Config::dense_eps the touched rows use torch.optim.Adam's arithmetic instead (eps after
// bias correction, Adam's moment order), so a run where every row is touched every step is
// bitwise the dense Adam trajectory. The table's m and v live in optimizer slots 0 and 1 at the
// table's offset, as for dense params, so SparseAdam shares an arena with Adam or AdamW.
#pragma once

#include <cstdint>
#include <span>

#include "shoal/core/arena.h"

namespace shoal::optim {

template <class T>
class SparseAdam {
 public:
  struct Config {
    double lr = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    bool dense_eps = false;  // true: torch.optim.Adam's formula on touched rows
  };

  explicit SparseAdam(Config c);

  static constexpr int slots() { return 2; }
  const Config& config() const { return cfg_; }
  double lr() const { return cfg_.lr; }
  void set_lr(double lr);
  int64_t step_count() const { return step_; }

  // Once per optimizer step, before any update_rows of that step.
  void begin_step();
  // Updates rows `rows` of `table` (a kSparseRows param of `arena`) with row_grads [R, D]:
  // row_grads row k is the gradient of table row rows[k]. Rows must be distinct (coalesced:
  // PyTorch sums duplicate indices before the update; the embedding layer does the same).
  // Threads may update disjoint row sets of one table concurrently.
  void update_rows(const Arena& arena, const Param<T>& table, std::span<const int32_t> rows,
                   ConstMat<T> row_grads) const;
  // The same update with the gradient of row rows[k] at row_grads[k] (D contiguous elements):
  // a caller whose row gradients live in a dense [rows, D] buffer (or in several) points at
  // them instead of copying them into a compact matrix first. Rows come in any order; unless
  // they sweep the table (ascending, at least a quarter of its rows: core/prefetch.h), the
  // rows a few positions ahead are prefetched (value, moments, gradient), since touched rows
  // are then random lines of tables too big for L1.
  void update_rows(const Arena& arena, const Param<T>& table, std::span<const int32_t> rows,
                   std::span<const T* const> row_grads) const;
  // Several tables (at most 4) indexed by the same rows, in one pass: row rows[k] of every
  // table in turn, its gradient row k of that table's row_grads [R, D_table] (or, when
  // row_ptrs is not empty, at row_ptrs[k]). For tables whose gradients arrive together, such
  // as NCF's MLP and GMF tables of one side: one walk over the rows instead of one per table
  // (narrow rows, e.g. 8 floats, cost about 1.4x per element more when updated in a pass of
  // their own). Each table's rows get the same arithmetic as from update_rows (which is this
  // pass over one table).
  struct TableRows {
    const Param<T>* table = nullptr;
    ConstMat<T> row_grads;
    std::span<const T* const> row_ptrs;
  };
  void update_rows(const Arena& arena, std::span<const int32_t> rows,
                   std::span<const TableRows> tables) const;

 private:
  // Checks the table and returns its row width.
  Index checked_width(const Arena& arena, const Param<T>& table) const;

  Config cfg_;
  int64_t step_ = 0;
  T lerp_w1_ = 0, lerp_w2_ = 0, beta2_ = 0, neg_step_size_ = 0, inv_bias2_sqrt_ = 1, eps_ = 0;
};

extern template class SparseAdam<float>;
extern template class SparseAdam<double>;

}  // namespace shoal::optim
