// A replica's rows of its share (train/ncf_shares.h): the hand-over of the rows' gradients and
// the bookkeeping of the rows' sums across shares.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "shoal/kernels/isa.h"
#include "shoal/models/ncf.h"
#include "shoal/train/ncf_shares.h"
#include "support/gradcheck.h"

namespace shoal {
namespace ncf_shares_test {

using models::Ncf;
using models::NcfKind;
using train::NcfShareRows;

// Hand-over (NcfShareRows::set_hand_over) moves a side's MLP and GMF row gradients out of the
// tables' buffers into row_grads, unchanged: against a model without hand-over, the handed rows are
// the rows it flagged and their gradients its buffers' rows, bitwise (both are one sum per row from
// zero, in the same order); a side not handed over stays in the buffers. For the fused chunk and
// the layer-by-layer path, both sides handed over (one thread) and the users only (shares by user).
void check_hand_over(bool fused, bool items_too) {
  const Index n = 30, chunk = 12, c = 5;
  auto make = [&] {
    return Ncf<float>::Config{.kind = NcfKind::kNeuMf,
                              .num_users = 17,
                              .num_items = 27,
                              .factors = 8,
                              .layers = {64, 32, 16, 8},
                              .context = c,
                              .embedding_std = 0.3,
                              .fused_tower = fused};
  };
  Ncf<float> a(make()), b(make());
  NcfShareRows<float> sa(a), sb(b);
  sa.set_hand_over(0, true);
  sa.set_hand_over(1, items_too);
  Buffer<float> context;
  Planner pa, pb;
  a.plan(pa, chunk);
  b.plan(pb, chunk);
  sa.plan(pa, n);
  sb.plan(pb, n);
  pa.buffer(context, Region::kActivations, "context", {n, c});
  Arena arena_a(std::move(pa)), arena_b(std::move(pb));
  RngStream ra(7, 1), rb(7, 1);
  a.init(ra);
  b.init(rb);
  testing::fill_uniform(context.view.data, context.view.numel(), 4);
  std::vector<int32_t> users(static_cast<size_t>(n)), items(static_cast<size_t>(n));
  std::vector<float> labels(static_cast<size_t>(n));
  for (Index r = 0; r < n; ++r) {
    // Even ids only: a row's place among the share's distinct rows is not its id.
    users[static_cast<size_t>(r)] = static_cast<int32_t>(2 * ((r * 5 + r / 4) % 8));
    items[static_cast<size_t>(r)] = static_cast<int32_t>(2 * ((r * 7 + 2) % 13));
    labels[static_cast<size_t>(r)] = r % 4 == 0 ? 1.0f : 0.0f;
  }
  const std::span<const int32_t> us(users), is(items);
  Ctx ctx;
  for (NcfShareRows<float>* m : {&sa, &sb}) {
    EXPECT_EQ(m->model().fused(), fused);
    m->begin(ctx, us, is);
    for (Index r0 = 0; r0 < n; r0 += chunk) {
      const Index k = std::min(chunk, n - r0);
      const auto cu = static_cast<size_t>(r0), ck = static_cast<size_t>(k);
      m->train_chunk(ctx, us.subspan(cu, ck), is.subspan(cu, ck),
                     ConstMat<float>(context.view.data + r0 * c, k, c), labels.data() + r0,
                     1.0f / static_cast<float>(n));
    }
    m->end(ctx);
  }
  Index handed_rows = 0;
  float largest = 0;
  for (size_t t = 0; t < a.tables().size(); ++t) {
    const auto& table = a.tables()[t];
    const int side = table.is_user ? 0 : 1;
    const bool handed = side == 0 || items_too;
    EXPECT_EQ(sa.hands_over_table(t), handed) << table.name;
    EXPECT_FALSE(sb.hands_over_table(t)) << table.name;
    const auto ta = a.table_grad(t), tb = b.table_grad(t);
    if (!handed) {
      for (Index r = 0; r < tb.grad.rows; ++r) {
        EXPECT_EQ(ta.touched[r], tb.touched[r]) << table.name << " row " << r;
        for (Index j = 0; j < tb.grad.cols; ++j)
          EXPECT_EQ(ta.grad(r, j), tb.grad(r, j)) << table.name << " row " << r;
      }
      continue;
    }
    const auto g = sa.row_grads(side);
    const bool gmf = table.name.find("gmf") != std::string::npos;
    const ConstMat<float> grads = gmf ? g.gmf_grads : g.grads;
    ASSERT_EQ(grads.rows, static_cast<Index>(g.rows.size()));
    ASSERT_EQ(grads.cols, tb.grad.cols);
    Index flagged = 0;
    for (Index r = 0; r < tb.grad.rows; ++r) {
      EXPECT_EQ(ta.touched[r], 0) << table.name << " row " << r << ": handed over, yet flagged";
      flagged += tb.touched[r];
    }
    EXPECT_EQ(flagged, static_cast<Index>(g.rows.size())) << table.name;
    for (size_t k = 0; k < g.rows.size(); ++k) {
      const int32_t row = g.rows[k];
      EXPECT_EQ(tb.touched[row], 1) << table.name << " row " << row;
      for (Index j = 0; j < grads.cols; ++j) {
        EXPECT_EQ(grads(static_cast<Index>(k), j), tb.grad(row, j)) << table.name << " " << row;
        largest = std::max(largest, std::abs(tb.grad(row, j)));
      }
    }
    handed_rows += static_cast<Index>(g.rows.size());
  }
  EXPECT_EQ(handed_rows, 2 * 8 + (items_too ? 2 * 13 : 0));  // MLP and GMF tables
  EXPECT_GT(largest, 1e-4f);                                 // the gradients are not all zero
}
TEST(NcfShareRows, HandOverMovesTheRowGradientsUnchanged) {
  for (const bool fused : {true, false}) {
    check_hand_over(fused, /*items_too=*/true);
    check_hand_over(fused, /*items_too=*/false);
  }
}

// A share whose rows added into the dz sums and that never finished (a step abandoned midway)
// leaves no trace: the next share's gradients are bitwise those of a model that never ran it
// (Ncf::close_rows clears the sums it used; Ncf::open_rows clears the rest after an unfinished
// one).
void check_abandoned_share(bool fused) {
  const Index n = 30, chunk = 12, c = 5;
  const Ncf<float>::Config cfg{.kind = NcfKind::kNeuMf,
                               .num_users = 17,
                               .num_items = 27,
                               .factors = 8,
                               .layers = {64, 32, 16, 8},
                               .context = c,
                               .embedding_std = 0.3,
                               .fused_tower = fused};
  Ncf<float> a(cfg), b(cfg);
  NcfShareRows<float> sa(a), sb(b);
  Buffer<float> context;
  Planner pa, pb;
  a.plan(pa, chunk);
  b.plan(pb, chunk);
  sa.plan(pa, n);
  sb.plan(pb, n);
  pa.buffer(context, Region::kActivations, "context", {n, c});
  Arena arena_a(std::move(pa)), arena_b(std::move(pb));
  RngStream ra(9, 1), rb(9, 1);
  a.init(ra);
  b.init(rb);
  testing::fill_uniform(context.view.data, context.view.numel(), 6);
  std::vector<int32_t> users(static_cast<size_t>(n)), items(static_cast<size_t>(n));
  std::vector<float> labels(static_cast<size_t>(n));
  for (Index r = 0; r < n; ++r) {
    users[static_cast<size_t>(r)] = static_cast<int32_t>((r * 5 + r / 4) % 17);
    items[static_cast<size_t>(r)] = static_cast<int32_t>((r * 7 + 2) % 27);
    labels[static_cast<size_t>(r)] = r % 4 == 0 ? 1.0f : 0.0f;
  }
  const std::span<const int32_t> us(users), is(items);
  const float scale = 1.0f / static_cast<float>(n);
  Ctx ctx;
  auto run_chunk = [&](NcfShareRows<float>& m, Index r0) {
    const Index k = std::min(chunk, n - r0);
    const auto cu = static_cast<size_t>(r0), ck = static_cast<size_t>(k);
    m.train_chunk(ctx, us.subspan(cu, ck), is.subspan(cu, ck),
                  ConstMat<float>(context.view.data + r0 * c, k, c), labels.data() + r0, scale);
  };
  // The abandoned share: one chunk, no end; then every gradient it left is zeroed.
  sa.begin(ctx, us, is);
  run_chunk(sa, 0);
  a.for_each_param([](const std::string&, Param<float>& p) {
    if (p.kind == ParamKind::kDense) std::fill(p.grad.begin(), p.grad.end(), 0.0f);
  });
  a.clear_table_grads();
  for (NcfShareRows<float>* m : {&sa, &sb}) {
    m->begin(ctx, us, is);
    for (Index r0 = 0; r0 < n; r0 += chunk) run_chunk(*m, r0);
    m->end(ctx);
  }
  std::vector<std::vector<float>> ga, gb;
  a.for_each_param([&](const std::string&, Param<float>& p) {
    if (p.kind == ParamKind::kDense) ga.emplace_back(p.grad.begin(), p.grad.end());
  });
  b.for_each_param([&](const std::string&, Param<float>& p) {
    if (p.kind == ParamKind::kDense) gb.emplace_back(p.grad.begin(), p.grad.end());
  });
  EXPECT_EQ(ga, gb);
  for (size_t t = 0; t < a.tables().size(); ++t) {
    const auto ta = a.table_grad(t), tb = b.table_grad(t);
    for (Index r = 0; r < tb.grad.rows; ++r)
      for (Index j = 0; j < tb.grad.cols; ++j)
        ASSERT_EQ(ta.grad(r, j), tb.grad(r, j)) << a.tables()[t].name << " row " << r;
  }
}
TEST(NcfShareRows, AbandonedShareLeavesNoTrace) {
  for (const bool fused : {true, false}) {
    check_abandoned_share(fused);
  }
}

}  // namespace ncf_shares_test
}  // namespace shoal
