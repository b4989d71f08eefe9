// A tiny arena with odd-sized dense params (and optionally a sparse table), deterministic
// changing gradients, and helpers to compare against scalar double references.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "shoal/core/arena.h"

namespace shoal::testing {

template <class T>
struct TinyModel {
  Param<T> w1, b1, w2, table;
  Arena arena;

  // slots: optimizer state slots to plan; table_rows > 0 adds a kSparseRows table [rows, 5].
  explicit TinyModel(int slots, Index table_rows = 0) {
    Planner planner;
    planner.param(w1, "w1", {3, 5});
    if (table_rows > 0) planner.param(table, "table", {table_rows, 5}, ParamKind::kSparseRows);
    planner.param(b1, "b1", {7});
    planner.param(w2, "w2", {2, 9});
    planner.set_optim_slots(slots);
    arena = Arena(std::move(planner));
    int k = 0;
    for (Param<T>* p : dense())
      for (T& x : p->value) x = static_cast<T>(0.5 * std::sin(0.37 * ++k) + 0.1);
    if (table_rows > 0)
      for (T& x : table.value) x = static_cast<T>(0.3 * std::cos(0.23 * ++k));
  }
  std::vector<Param<T>*> dense() { return {&w1, &b1, &w2}; }

  // Gradient of element i of param `which` at step s (1-based): changes sign and scale over
  // steps, with exact zeros sprinkled in.
  static double grad_value(int which, Index i, int s) {
    if ((i + s + which) % 7 == 0) return 0.0;
    return std::sin(0.9 * static_cast<double>(i) + 1.7 * s + which) * (1.0 + 0.3 * s);
  }
  void set_grads(int s) {
    int which = 0;
    for (Param<T>* p : dense()) {
      ++which;
      for (Index i = 0; i < p->grad.numel(); ++i)
        p->grad.data[i] = static_cast<T>(grad_value(which, i, s));
    }
  }

  // Every element of the dense prefix that belongs to no param, in params, grads and every
  // optimizer slot, must still be zero.
  void expect_padding_zero() {
    std::vector<bool> used(static_cast<size_t>(arena.dense_param_elems()), false);
    for (Param<T>* p : dense())
      for (Index i = 0; i < p->value.numel(); ++i) used[static_cast<size_t>(p->offset + i)] = true;
    int holes = 0;
    for (Index i = 0; i < arena.dense_param_elems(); ++i) {
      if (used[static_cast<size_t>(i)]) continue;
      ++holes;
      EXPECT_EQ(arena.params<T>()[i], T(0)) << "param padding at " << i;
      EXPECT_EQ(arena.grads<T>()[i], T(0)) << "grad padding at " << i;
      for (int s = 0; s < arena.optim_slots(); ++s)
        EXPECT_EQ(arena.optim_state<T>(s)[i], T(0)) << "slot " << s << " padding at " << i;
    }
    EXPECT_GT(holes, 0) << "the fixture should have padding to check";
  }
};

// Reference state of one dense param, in double.
struct RefParam {
  std::vector<double> p, g, s0, s1, s2;
};

template <class T>
std::vector<RefParam> make_refs(TinyModel<T>& m) {
  std::vector<RefParam> refs;
  for (Param<T>* p : m.dense()) {
    RefParam r;
    for (T x : p->value) r.p.push_back(static_cast<double>(x));
    const size_t n = r.p.size();
    r.g.assign(n, 0.0);
    r.s0.assign(n, 0.0);
    r.s1.assign(n, 0.0);
    r.s2.assign(n, 0.0);
    refs.push_back(std::move(r));
  }
  return refs;
}

template <class T>
void set_ref_grads(std::vector<RefParam>& refs, int s) {
  for (size_t w = 0; w < refs.size(); ++w)
    for (size_t i = 0; i < refs[w].g.size(); ++i)
      refs[w].g[i] = static_cast<double>(static_cast<T>(
          TinyModel<T>::grad_value(static_cast<int>(w) + 1, static_cast<Index>(i), s)));
}

// max |a - b| / (|b| + floor) over all params.
template <class T>
double max_rel_diff(TinyModel<T>& m, const std::vector<RefParam>& refs, double floor = 1e-3) {
  double worst = 0.0;
  auto ps = m.dense();
  for (size_t w = 0; w < ps.size(); ++w)
    for (Index i = 0; i < ps[w]->value.numel(); ++i) {
      const double ref = refs[w].p[static_cast<size_t>(i)];
      const double d = std::abs(static_cast<double>(ps[w]->value.data[i]) - ref);
      worst = std::max(worst, d / (std::abs(ref) + floor));
    }
  return worst;
}

template <class T>
constexpr double tol() {
  return sizeof(T) == 4 ? 2e-5 : 1e-12;
}

}  // namespace shoal::testing
