#include "shoal/optim/sparse_adam.h"

#include <algorithm>
#include <cmath>

#include "shoal/core/prefetch.h"
#include "shoal/kernels/optim_update.h"

namespace shoal::optim {

template <class T>
SparseAdam<T>::SparseAdam(Config c) : cfg_(c) {
  SHOAL_CHECK(c.lr >= 0.0, "SparseAdam: lr must be >= 0, got {}", c.lr);
  SHOAL_CHECK(c.eps >= 0.0, "SparseAdam: eps must be >= 0, got {}", c.eps);
  SHOAL_CHECK(c.beta1 >= 0.0 && c.beta1 < 1.0, "SparseAdam: beta1 must be in [0, 1), got {}",
              c.beta1);
  SHOAL_CHECK(c.beta2 >= 0.0 && c.beta2 < 1.0, "SparseAdam: beta2 must be in [0, 1), got {}",
              c.beta2);
}

template <class T>
void SparseAdam<T>::set_lr(double lr) {
  SHOAL_CHECK(lr >= 0.0, "SparseAdam: lr must be >= 0, got {}", lr);
  cfg_.lr = lr;
}

template <class T>
void SparseAdam<T>::begin_step() {
  ++step_;
  const double t = static_cast<double>(step_);
  const double bias1 = 1.0 - std::pow(cfg_.beta1, t);
  const double bias2 = 1.0 - std::pow(cfg_.beta2, t);
  lerp_w1_ = static_cast<T>(1.0 - cfg_.beta1);
  lerp_w2_ = static_cast<T>(1.0 - cfg_.beta2);
  beta2_ = static_cast<T>(cfg_.beta2);
  eps_ = static_cast<T>(cfg_.eps);
  if (cfg_.dense_eps) {  // torch.optim.Adam's scalars
    neg_step_size_ = static_cast<T>(-(cfg_.lr / bias1));
    inv_bias2_sqrt_ = static_cast<T>(1.0 / std::sqrt(bias2));
  } else {  // SparseAdam: step_size = lr * sqrt(bias2) / bias1, in Python's order
    neg_step_size_ = static_cast<T>(-(cfg_.lr * std::sqrt(bias2) / bias1));
    inv_bias2_sqrt_ = T(1);
  }
}

template <class T>
Index SparseAdam<T>::checked_width(const Arena& arena, const Param<T>& table) const {
  SHOAL_CHECK(step_ > 0, "SparseAdam: update_rows() before begin_step()");
  SHOAL_CHECK(table.kind == ParamKind::kSparseRows && table.offset >= 0,
              "SparseAdam: the table must be an allocated kSparseRows parameter");
  SHOAL_CHECK(arena.optim_slots() >= slots(), "SparseAdam: needs {} optimizer slots, arena has {}",
              slots(), arena.optim_slots());
  SHOAL_CHECK(table.offset + table.value.numel() <= arena.param_elems(),
              "SparseAdam: the table does not belong to this arena");
  const Index n_rows = table.shape.rank == 0 ? 1 : table.shape[0];
  return table.value.numel() / n_rows;
}

// The single-table forms are the one-pass update with one table.
template <class T>
void SparseAdam<T>::update_rows(const Arena& arena, const Param<T>& table,
                                std::span<const int32_t> rows, ConstMat<T> row_grads) const {
  const TableRows one[] = {{.table = &table, .row_grads = row_grads}};
  update_rows(arena, rows, one);
}

template <class T>
void SparseAdam<T>::update_rows(const Arena& arena, const Param<T>& table,
                                std::span<const int32_t> rows,
                                std::span<const T* const> row_grads) const {
  const TableRows one[] = {{.table = &table, .row_ptrs = row_grads}};
  update_rows(arena, rows, one);
}

template <class T>
void SparseAdam<T>::update_rows(const Arena& arena, std::span<const int32_t> rows,
                                std::span<const TableRows> tables) const {
  SHOAL_CHECK(tables.size() <= kernels::kSparseMaxTables,
              "SparseAdam: {} tables in one pass, at most {}", tables.size(),
              kernels::kSparseMaxTables);
  kernels::SparseTable<T> t[kernels::kSparseMaxTables];
  // Rows that sweep every table forward are left to the hardware prefetchers.
  const bool ascending = std::is_sorted(rows.begin(), rows.end());
  bool prefetch = false;
  for (size_t j = 0; j < tables.size(); ++j) {
    const Param<T>& table = *tables[j].table;
    const ConstMat<T> grads = tables[j].row_grads;
    const std::span<const T* const> ptrs = tables[j].row_ptrs;
    const Index width = checked_width(arena, table);
    if (ptrs.empty())
      SHOAL_CHECK(grads.rows == static_cast<Index>(rows.size()) && grads.cols == width,
                  "SparseAdam: row_grads of table {} is [{}, {}], expected [{}, {}]", j, grads.rows,
                  grads.cols, rows.size(), width);
    else
      SHOAL_CHECK(ptrs.size() == rows.size(),
                  "SparseAdam: {} row gradients of table {} for {} rows", ptrs.size(), j,
                  rows.size());
    t[j] = {.value = table.value.data,
            .m = arena.optim_state<T>(0) + table.offset,
            .v = arena.optim_state<T>(1) + table.offset,
            .g = grads.data,
            .ptrs = ptrs.empty() ? nullptr : ptrs.data(),
            .width = width,
            .ldg = grads.ld};
    const Index n_rows = table.shape.rank == 0 ? 1 : table.shape[0];
#ifndef NDEBUG
    for (const int32_t r : rows) SHOAL_DCHECK(r >= 0 && r < n_rows);
#endif
    prefetch = prefetch || !ascending || !dense_rows(static_cast<Index>(rows.size()), n_rows);
  }
  // The whole step in one dispatched call: per row, the call was a visible share of an
  // 8-float row's update.
  kernels::SparseStep<T> s;
  s.dense_eps = cfg_.dense_eps;
  s.adam = {.lerp_w = lerp_w1_,
            .beta2 = beta2_,
            .one_minus_beta2 = lerp_w2_,
            .neg_step_size = neg_step_size_,
            .inv_bias2_sqrt = inv_bias2_sqrt_,
            .eps = eps_};
  s.sparse = {lerp_w1_, lerp_w2_, neg_step_size_, eps_};
  s.prefetch = prefetch;
  kernels::sparse_rows_update<T>(rows, std::span<const kernels::SparseTable<T>>(t, tables.size()),
                                 s);
}

template class SparseAdam<float>;
template class SparseAdam<double>;

}  // namespace shoal::optim
