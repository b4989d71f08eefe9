// The optimizers' elementwise updates over flat arrays (optim/ calls them on the arena's
// params, grads and moments): torch.optim's Adam/AdamW, SGD and SparseAdam arithmetic, one
// vector of the dispatched target at a time. The last partial vector runs through the same
// vector code on zero-padded lanes, so every element sees identical arithmetic wherever a range
// starts or ends: thread splits cannot change a bit. Each has a plain-loop _ref twin with the
// same operations in the same order (the vector code may fuse a multiply and an add where the
// compiler contracts them, so the twins agree to a few ulps, not bitwise).
// Legend: n elements.
#pragma once

#include <cstdint>
#include <span>

#include "shoal/core/tensor.h"

namespace shoal::kernels {

// One Adam step's constants, rounded to T once (optim/adam.cpp says what each is).
template <class T>
struct AdamScalars {
  T lerp_w = 0, beta2 = 0, one_minus_beta2 = 0, weight_decay = 0, decay = 1;
  T neg_step_size = 0, inv_bias2_sqrt = 1, eps = 0;
};

enum class AdamDecay : uint8_t { kNone, kL2, kDecoupled };

// kDecoupled: p *= decay; kL2: g' = g + wd·p. m = m + lerp_w·(g' − m);
// v = v·β2 + (1 − β2)·g'²; with amsgrad vmax = max(vmax, v) is used for v below;
// p = p + (neg_step_size·m) / (√v·inv_bias2_sqrt + eps). vmax may be null without amsgrad.
template <class T>
void adam_update(AdamDecay decay, bool amsgrad, Index n, T* p, const T* g, T* m, T* v, T* vmax,
                 const AdamScalars<T>& s);
template <class T>
void adam_update_ref(AdamDecay decay, bool amsgrad, Index n, T* p, const T* g, T* m, T* v, T* vmax,
                     const AdamScalars<T>& s);

template <class T>
struct SgdScalars {
  T neg_lr = 0, weight_decay = 0, momentum = 0, one_minus_damp = 1;
  bool decay = false, first = false, nesterov = false;
};

// g' = g (+ wd·p with decay). Without buf: p = p + neg_lr·g'. With it: buf = g' on the first
// step, else buf·momentum + one_minus_damp·g'; p = p + neg_lr·(nesterov ? g' + momentum·buf :
// buf).
template <class T>
void sgd_update(Index n, T* p, const T* g, T* buf, const SgdScalars<T>& s);
template <class T>
void sgd_update_ref(Index n, T* p, const T* g, T* buf, const SgdScalars<T>& s);

// torch.optim.SparseAdam on one row: m += (g − m)·lerp_w1; v += (g² − v)·lerp_w2;
// p = p + neg_step_size·(m / (√v + eps)).
template <class T>
void sparse_adam_update(Index n, T* p, const T* g, T* m, T* v, T lerp_w1, T lerp_w2,
                        T neg_step_size, T eps);
template <class T>
void sparse_adam_update_ref(Index n, T* p, const T* g, T* m, T* v, T lerp_w1, T lerp_w2,
                            T neg_step_size, T eps);

// A sparse step over the touched rows of up to kSparseMaxTables tables, one dispatched call per
// step: for k in order, every table's row rows[k] (value, m and v at rows[k]·width) is updated
// from its gradient row k (ptrs[k], or g + k·ldg without ptrs). dense_eps: Adam's update
// (adam_update with `adam`, no decay, no amsgrad), else SparseAdam's (sparse_adam_update with
// `sparse`). prefetch: the rows kRowsAhead ahead are prefetched (rows that sweep a table
// forward are better left to the hardware).
inline constexpr size_t kSparseMaxTables = 4;
template <class T>
struct SparseTable {
  T* value = nullptr;
  T* m = nullptr;
  T* v = nullptr;
  const T* g = nullptr;
  const T* const* ptrs = nullptr;
  Index width = 0, ldg = 0;
  const T* grad(Index k) const { return ptrs != nullptr ? ptrs[k] : g + k * ldg; }
};
template <class T>
struct SparseScalars {
  T lerp_w1 = 0, lerp_w2 = 0, neg_step_size = 0, eps = 0;
};
template <class T>
struct SparseStep {
  bool dense_eps = false;
  AdamScalars<T> adam;
  SparseScalars<T> sparse;
  bool prefetch = false;
};
template <class T>
void sparse_rows_update(std::span<const int32_t> rows, std::span<const SparseTable<T>> tables,
                        const SparseStep<T>& s);
template <class T>
void sparse_rows_update_ref(std::span<const int32_t> rows, std::span<const SparseTable<T>> tables,
                            const SparseStep<T>& s);

}  // namespace shoal::kernels
