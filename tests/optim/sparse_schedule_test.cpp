// SparseAdam (lazy rows) against a scalar torch.optim.SparseAdam reference, its dense_eps mode
// against dense Adam, and StepLR / neuralforecast schedule values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "optim_fixture.h"
#include "shoal/optim/adam.h"
#include "shoal/optim/lr_schedule.h"
#include "shoal/optim/sparse_adam.h"

namespace shoal {
namespace sparse_schedule_test {

using optim::SparseAdam;
using testing::TinyModel;

constexpr Index kRows = 6;
constexpr Index kWidth = 5;

double row_grad(Index row, Index j, int s) {
  return std::sin(1.3 * row + 0.7 * j + 2.1 * s) * s;
}

// Rows touched at step s: a changing subset, never row 4.
std::vector<int32_t> rows_at(int s) {
  if (s % 3 == 1) return {0, 2, 5};
  if (s % 3 == 2) return {3, 0};
  return {1, 2, 3, 5};
}

template <class T>
std::vector<T> grads_for(const std::vector<int32_t>& rows, int s) {
  std::vector<T> g;
  for (int32_t r : rows)
    for (Index j = 0; j < kWidth; ++j) g.push_back(static_cast<T>(row_grad(r, j, s)));
  return g;
}

template <class T>
void sparse_matches_reference() {
  const SparseAdam<double>::Config c{.lr = 0.01};
  SparseAdam<T> opt({.lr = c.lr});
  TinyModel<T> m(SparseAdam<T>::slots(), kRows);
  const size_t numel = static_cast<size_t>(m.table.value.numel());
  std::vector<double> p(numel), mm(numel, 0.0), vv(numel, 0.0);
  for (size_t i = 0; i < numel; ++i) p[i] = static_cast<double>(m.table.value.data[i]);
  const std::vector<T> before(m.table.value.begin(), m.table.value.end());
  for (int s = 1; s <= 7; ++s) {
    const auto rows = rows_at(s);
    const auto g = grads_for<T>(rows, s);
    opt.begin_step();
    opt.update_rows(m.arena, m.table, rows,
                    ConstMat<T>(g.data(), static_cast<Index>(rows.size()), kWidth));
    // torch.optim.SparseAdam, written from its documented algorithm.
    const double bc1 = 1.0 - std::pow(c.beta1, s), bc2 = 1.0 - std::pow(c.beta2, s);
    for (size_t k = 0; k < rows.size(); ++k)
      for (Index j = 0; j < kWidth; ++j) {
        const size_t i = static_cast<size_t>(rows[k] * kWidth + j);
        const double gi = static_cast<double>(g[k * kWidth + static_cast<size_t>(j)]);
        mm[i] = c.beta1 * mm[i] + (1 - c.beta1) * gi;
        vv[i] = c.beta2 * vv[i] + (1 - c.beta2) * gi * gi;
        p[i] -= c.lr * std::sqrt(bc2) / bc1 * mm[i] / (std::sqrt(vv[i]) + c.eps);
      }
  }
  double worst = 0;
  for (size_t i = 0; i < p.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(m.table.value.data[i]) - p[i]) /
                                (std::abs(p[i]) + 1e-3));
  EXPECT_LE(worst, testing::tol<T>());
  // Row 4 was never listed: its values and moments are untouched, bit for bit.
  for (Index j = 0; j < kWidth; ++j) {
    const Index i = 4 * kWidth + j;
    EXPECT_EQ(m.table.value.data[i], before[static_cast<size_t>(i)]);
    EXPECT_EQ(m.arena.template optim_state<T>(0)[m.table.offset + i], T(0));
    EXPECT_EQ(m.arena.template optim_state<T>(1)[m.table.offset + i], T(0));
  }
  // The dense params were not part of the sparse update.
  for (Index i = 0; i < m.w1.value.numel(); ++i)
    EXPECT_EQ(m.arena.template optim_state<T>(0)[m.w1.offset + i], T(0));
}

TEST(SparseAdam, MatchesTorchSparseAdamReferenceFloat) {
  sparse_matches_reference<float>();
}
TEST(SparseAdam, MatchesTorchSparseAdamReferenceDouble) {
  sparse_matches_reference<double>();
}

TEST(SparseAdam, UntouchedRowsKeepStateWhileOthersMove) {
  // A row skipped at step 2 must not decay its moments (lazy), unlike dense Adam with a zero
  // gradient, which would.
  SparseAdam<float> opt({.lr = 0.1});
  TinyModel<float> m(2, kRows);
  const float* mom = m.arena.optim_state<float>(0) + m.table.offset;
  std::vector<int32_t> all = {0, 1, 2, 3, 4, 5};
  const auto g1 = grads_for<float>(all, 1);
  opt.begin_step();
  opt.update_rows(m.arena, m.table, all, ConstMat<float>(g1.data(), kRows, kWidth));
  const std::vector<float> m_after1(mom, mom + kRows * kWidth);
  const std::vector<float> p_after1(m.table.value.begin(), m.table.value.end());
  std::vector<int32_t> some = {5, 1};
  const auto g2 = grads_for<float>(some, 2);
  opt.begin_step();
  opt.update_rows(m.arena, m.table, some, ConstMat<float>(g2.data(), 2, kWidth));
  for (Index r = 0; r < kRows; ++r) {
    const bool touched = r == 1 || r == 5;
    for (Index j = 0; j < kWidth; ++j) {
      const auto i = static_cast<size_t>(r * kWidth + j);
      if (touched) {
        EXPECT_NE(mom[i], m_after1[i]) << "row " << r;
        EXPECT_NE(m.table.value.data[i], p_after1[i]) << "row " << r;
      } else {
        EXPECT_EQ(mom[i], m_after1[i]) << "row " << r;
        EXPECT_EQ(m.table.value.data[i], p_after1[i]) << "row " << r;
      }
    }
  }
}

template <class T>
void dense_eps_equals_dense_adam() {
  // The same table as a dense param under Adam, and as a sparse table under SparseAdam with
  // dense_eps, every row touched every step (rows listed out of order, grads with a stride).
  Param<T> dense_table, sparse_table;
  Planner pd, ps;
  pd.param(dense_table, "t", {kRows, kWidth});
  pd.set_optim_slots(2);
  ps.param(sparse_table, "t", {kRows, kWidth}, ParamKind::kSparseRows);
  ps.set_optim_slots(2);
  Arena ad(std::move(pd)), as(std::move(ps));
  for (Index i = 0; i < kRows * kWidth; ++i)
    dense_table.value.data[i] = sparse_table.value.data[i] = static_cast<T>(std::cos(0.3 * i));
  optim::Adam<T> adam({.lr = 0.02});
  SparseAdam<T> sparse({.lr = 0.02, .dense_eps = true});
  const std::vector<int32_t> order = {3, 0, 5, 1, 4, 2};
  constexpr Index kLd = kWidth + 3;
  for (int s = 1; s <= 6; ++s) {
    std::vector<T> g(static_cast<size_t>(kRows * kLd), T(99));
    for (size_t k = 0; k < order.size(); ++k)
      for (Index j = 0; j < kWidth; ++j) {
        const T gv = static_cast<T>(row_grad(order[k], j, s));
        g[k * kLd + static_cast<size_t>(j)] = gv;
        dense_table.grad.data[order[k] * kWidth + j] = gv;
      }
    adam.step(ad);
    sparse.begin_step();
    sparse.update_rows(as, sparse_table, order, ConstMat<T>(g.data(), kRows, kWidth, kLd));
  }
  const size_t bytes = static_cast<size_t>(kRows * kWidth) * sizeof(T);
  EXPECT_EQ(std::memcmp(dense_table.value.data, sparse_table.value.data, bytes), 0);
  EXPECT_EQ(std::memcmp(ad.optim_state<T>(1), as.optim_state<T>(1) + sparse_table.offset, bytes),
            0);
}

TEST(SparseAdam, DenseEpsEqualsDenseAdamWhenAllRowsTouchedFloat) {
  dense_eps_equals_dense_adam<float>();
}
TEST(SparseAdam, DenseEpsEqualsDenseAdamWhenAllRowsTouchedDouble) {
  dense_eps_equals_dense_adam<double>();
}

// Several tables in one pass (update_rows over TableRows, as the NCF trainer updates a side's
// MLP and GMF rows) update every table bitwise as one update_rows call per table, in both
// arithmetic modes, with rows in ascending and in scattered order.
TEST(SparseAdam, TablesInOnePassEqualOnePassPerTable) {
  struct Two {
    Param<float> a, b;
    Arena arena;
    Two() {
      Planner planner;
      planner.param(a, "a", {kRows, 5}, ParamKind::kSparseRows);
      planner.param(b, "b", {kRows, 9}, ParamKind::kSparseRows);
      planner.set_optim_slots(2);
      arena = Arena(std::move(planner));
      int k = 0;
      for (Param<float>* p : {&a, &b})
        for (float& x : p->value) x = static_cast<float>(0.3 * std::cos(0.23 * ++k));
    }
  };
  for (bool dense_eps : {false, true}) {
    SparseAdam<float> one({.lr = 0.05, .dense_eps = dense_eps});
    SparseAdam<float> each({.lr = 0.05, .dense_eps = dense_eps});
    Two x, y;
    for (int s = 1; s <= 7; ++s) {
      const auto rows = rows_at(s);
      const auto r = static_cast<Index>(rows.size());
      std::vector<float> ga, gb;
      for (int32_t row : rows) {
        for (Index j = 0; j < 5; ++j) ga.push_back(static_cast<float>(row_grad(row, j, s)));
        for (Index j = 0; j < 9; ++j) gb.push_back(static_cast<float>(row_grad(row, j + 5, s)));
      }
      one.begin_step();
      each.begin_step();
      using Rows = SparseAdam<float>::TableRows;
      const Rows tables[] = {{&x.a, ConstMat<float>(ga.data(), r, 5)},
                             {&x.b, ConstMat<float>(gb.data(), r, 9)}};
      one.update_rows(x.arena, rows, std::span<const Rows>(tables));
      each.update_rows(y.arena, y.a, rows, ConstMat<float>(ga.data(), r, 5));
      each.update_rows(y.arena, y.b, rows, ConstMat<float>(gb.data(), r, 9));
    }
    for (auto [p, q] : {std::pair{&x.a, &y.a}, std::pair{&x.b, &y.b}}) {
      const size_t bytes = static_cast<size_t>(p->value.numel()) * sizeof(float);
      EXPECT_EQ(std::memcmp(p->value.data, q->value.data, bytes), 0) << dense_eps;
      for (int slot = 0; slot < 2; ++slot)
        EXPECT_EQ(std::memcmp(x.arena.optim_state<float>(slot) + p->offset,
                              y.arena.optim_state<float>(slot) + q->offset, bytes),
                  0)
            << dense_eps << " slot " << slot;
    }
    EXPECT_NE(std::memcmp(x.b.value.data, Two().b.value.data, 9 * kRows * sizeof(float)), 0);
  }
}

// The row-pointer overload (each row's gradient where it lies, rows in any order) updates
// values and moments bitwise as the compact-matrix one, in both arithmetic modes.
TEST(SparseAdam, RowPointersEqualCompactRows) {
  for (bool dense_eps : {false, true}) {
    SparseAdam<float> a({.lr = 0.05, .dense_eps = dense_eps});
    SparseAdam<float> b({.lr = 0.05, .dense_eps = dense_eps});
    TinyModel<float> ma(2, kRows), mb(2, kRows);
    for (int s = 1; s <= 7; ++s) {
      const auto rows = rows_at(s);
      const auto g = grads_for<float>(rows, s);
      // The same gradients scattered over a bigger buffer, as rows of a dense [rows, D] grad.
      std::vector<float> scattered(static_cast<size_t>(2 * kRows * kWidth), 7.0f);
      std::vector<const float*> ptrs;
      for (size_t k = 0; k < rows.size(); ++k) {
        float* dst = scattered.data() + (2 * rows[k] + 1) * kWidth;
        std::copy_n(g.data() + static_cast<Index>(k) * kWidth, kWidth, dst);
        ptrs.push_back(dst);
      }
      a.begin_step();
      b.begin_step();
      a.update_rows(ma.arena, ma.table, rows,
                    ConstMat<float>(g.data(), static_cast<Index>(rows.size()), kWidth));
      b.update_rows(mb.arena, mb.table, rows, std::span<const float* const>(ptrs));
    }
    const size_t bytes = static_cast<size_t>(kRows * kWidth) * sizeof(float);
    EXPECT_EQ(std::memcmp(ma.table.value.data, mb.table.value.data, bytes), 0) << dense_eps;
    for (int slot = 0; slot < 2; ++slot)
      EXPECT_EQ(std::memcmp(ma.arena.optim_state<float>(slot) + ma.table.offset,
                            mb.arena.optim_state<float>(slot) + mb.table.offset, bytes),
                0)
          << dense_eps << " slot " << slot;
    EXPECT_NE(std::memcmp(ma.table.value.data, TinyModel<float>(2, kRows).table.value.data, bytes),
              0);
  }
  SparseAdam<float> opt({});
  TinyModel<float> m(2, kRows);
  opt.begin_step();
  const std::vector<int32_t> rows = {0, 1};
  const std::vector<const float*> one = {m.table.value.data};
  EXPECT_THROW(opt.update_rows(m.arena, m.table, rows, std::span<const float* const>(one)), Error);
}

TEST(SparseAdam, RejectsBadUse) {
  SparseAdam<float> opt({});
  TinyModel<float> m(2, kRows);
  std::vector<float> g(static_cast<size_t>(2 * kWidth), 1.0f);
  std::vector<int32_t> rows = {0, 1};
  EXPECT_THROW(opt.update_rows(m.arena, m.table, rows, ConstMat<float>(g.data(), 2, kWidth)),
               Error);  // before begin_step
  opt.begin_step();
  EXPECT_THROW(opt.update_rows(m.arena, m.w1, rows, ConstMat<float>(g.data(), 2, kWidth)),
               Error);  // a dense param
  EXPECT_THROW(opt.update_rows(m.arena, m.table, rows, ConstMat<float>(g.data(), 2, kWidth - 1)),
               Error);  // wrong width
  EXPECT_NO_THROW(opt.update_rows(m.arena, m.table, rows, ConstMat<float>(g.data(), 2, kWidth)));
}

// ---- schedules --------------------------------------------------------------------------

TEST(StepLR, NeuralforecastHalvesAfter333_666_999) {
  EXPECT_EQ(optim::lr_decay_steps(1000, 3), 333);
  auto sched = optim::StepLR::neuralforecast(1e-3, 1000, 3);
  std::vector<double> used;  // lr used by optimizer step k = used[k - 1]
  for (int k = 1; k <= 1000; ++k) {
    used.push_back(sched.lr());
    sched.step();
  }
  for (int k = 1; k <= 1000; ++k) {
    const double expect = k <= 333 ? 1e-3 : k <= 666 ? 5e-4 : k <= 999 ? 2.5e-4 : 1.25e-4;
    ASSERT_EQ(used[static_cast<size_t>(k - 1)], expect) << "step " << k;
  }
  EXPECT_EQ(sched.last_step(), 1000);
}

TEST(StepLR, NoDecayByDefaultAndTinyRuns) {
  EXPECT_EQ(optim::lr_decay_steps(1000, -1), 100'000'000);
  EXPECT_EQ(optim::lr_decay_steps(1000, 0), 100'000'000);
  EXPECT_EQ(optim::lr_decay_steps(5, 10), 1);  // max(5 // 10, 1)
  auto flat = optim::StepLR::neuralforecast(1e-3, 5000, -1);
  for (int k = 0; k < 5000; ++k) flat.step();
  EXPECT_EQ(flat.lr(), 1e-3);
  auto every = optim::StepLR::neuralforecast(1.0, 5, 10);
  every.step();
  EXPECT_EQ(every.lr(), 0.5);
  every.step();
  EXPECT_EQ(every.lr(), 0.25);
}

TEST(StepLR, ChainableProductLikePyTorch) {
  // PyTorch multiplies the current lr by gamma (not base·gamma^k), which differs in the last
  // bits for gamma = 0.1.
  optim::StepLR s(0.01, {.step_size = 2, .gamma = 0.1});
  double expect = 0.01;
  for (int k = 1; k <= 9; ++k) {
    if (k % 2 == 0) expect *= 0.1;
    EXPECT_EQ(s.step(), expect) << k;
  }
  EXPECT_THROW(optim::StepLR(0.1, {.step_size = 0}), Error);
}

}  // namespace sparse_schedule_test
}  // namespace shoal
