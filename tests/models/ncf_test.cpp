#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "shoal/kernels/isa.h"
#include "shoal/models/ncf.h"
#include "shoal/models/ncf_row_set.h"
#include "support/gradcheck.h"

namespace shoal {
namespace ncf_test {

using models::Ncf;
using models::NcfKind;

// Central differences through every parameter, tables included (their touched rows are
// scattered into dense arrays for the check), on awkward widths and repeated ids.
// Both forms of the first tower layer (factored by distinct rows, and one Linear), a tower of
// two layers and of one (the first layer then writes the predict layer's input).
void check_gradients(NcfKind kind, Index context, bool factored = true,
                     std::vector<Index> layers = {6, 5, 3}) {
  const Index n = 5;
  Ncf<double> model({.kind = kind,
                     .num_users = 4,
                     .num_items = 6,
                     .factors = 3,
                     .layers = layers,
                     .context = context,
                     .embedding_std = 0.5,
                     .factored_first_layer = factored});
  Buffer<double> ctxbuf, dout;
  Planner planner;
  model.plan(planner, n);
  planner.buffer(ctxbuf, Region::kActivations, "context", {n, std::max<Index>(context, 1)});
  planner.buffer(dout, Region::kActivationGrads, "dout", {n, 1});
  Arena arena(std::move(planner));
  RngStream rng(11, 1);
  model.init(rng);
  testing::fill_uniform(ctxbuf.view.data, ctxbuf.view.numel(), 5);
  const std::vector<int32_t> users = {1, 3, 1, 0, 3}, items = {5, 0, 2, 5, 5};
  const ConstMat<double> c = ctxbuf.mat().cols_block(0, context);
  Ctx ctx;

  std::vector<testing::GradVar> vars;
  std::vector<std::vector<double>> table_grads(model.tables().size());
  model.for_each_param([&](const std::string& name, Param<double>& p) {
    if (p.kind == ParamKind::kDense) {
      vars.push_back({name, p.value.data, p.grad.data, p.value.numel(), true});
    }
  });
  for (size_t t = 0; t < model.tables().size(); ++t) {
    auto& w = model.tables()[t].layer.p.weight;
    table_grads[t].assign(static_cast<size_t>(w.value.numel()), 0.0);
    vars.push_back(
        {model.tables()[t].name, w.value.data, table_grads[t].data(), w.value.numel(), false});
  }
  MatView<double> out;
  auto res = testing::gradcheck(
      vars, {{arena.find<double>("logits").data, dout.view.data, n}},
      [&] { out = model.forward(ctx, users, items, c); },
      [&] {
        model.backward(ctx, users, items, dout.mat().rows_block(0, n));
        // The dense row grads, read and then cleared as the trainer does; a row that is not
        // flagged as touched must have a zero gradient.
        for (size_t t = 0; t < model.tables().size(); ++t) {
          const auto tg = model.table_grad(t);
          for (Index r = 0; r < tg.grad.rows; ++r) {
            const bool used = std::find(users.begin(), users.end(), r) != users.end();
            const bool used_item = std::find(items.begin(), items.end(), r) != items.end();
            EXPECT_EQ(tg.touched[r] != 0, model.tables()[t].is_user ? used : used_item) << r;
            for (Index j = 0; j < tg.grad.cols; ++j) {
              table_grads[t][static_cast<size_t>(r * tg.grad.cols + j)] = tg.grad(r, j);
              if (!tg.touched[r]) {
                EXPECT_EQ(tg.grad(r, j), 0.0);
              }
            }
          }
        }
        model.clear_table_grads();
      });
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
}

// score_user (recommendation: the user's part of the first layer once, every item's once)
// is forward's function, for every kind, with and without context, towers of one and two
// layers, factored first layer or not.
void check_score_user(NcfKind kind, Index context, std::vector<Index> layers, bool factored) {
  const Index n = 6;
  Ncf<double> model({.kind = kind,
                     .num_users = 4,
                     .num_items = 6,
                     .factors = 3,
                     .layers = layers,
                     .context = context,
                     .embedding_std = 0.5,
                     .factored_first_layer = factored});
  Planner planner;
  model.plan(planner, n);
  Arena arena(std::move(planner));
  RngStream rng(5, 1);
  model.init(rng);
  std::vector<double> crow(static_cast<size_t>(context));
  testing::fill_uniform(crow.data(), context, 9);
  const auto tables = model.scoring_tables();
  const std::vector<int32_t> items = {5, 0, 2, 4, 1, 3};
  Ctx ctx;
  for (int32_t user = 0; user < 4; ++user) {
    std::vector<double> got(n), want(n), crows;
    const MatView<double> s = model.score_user(ctx, user, crow.data(), items, tables);
    for (Index r = 0; r < n; ++r) got[size_t(r)] = s.data[r * s.ld];
    for (Index r = 0; r < n; ++r) crows.insert(crows.end(), crow.begin(), crow.end());
    const std::vector<int32_t> users(static_cast<size_t>(n), user);
    const MatView<double> f =
        model.forward(ctx, users, items, ConstMat<double>(crows.data(), n, context));
    for (Index r = 0; r < n; ++r) want[size_t(r)] = f.data[r * f.ld];
    model.backward(ctx, users, items, ConstMat<double>(want.data(), n, 1));  // closes the rows
    model.clear_table_grads();
    for (Index r = 0; r < n; ++r) EXPECT_NEAR(got[size_t(r)], want[size_t(r)], 1e-12) << r;
  }
}

TEST(Ncf, ScoreUserEqualsForward) {
  for (bool factored : {true, false}) {
    check_score_user(NcfKind::kNeuMf, 3, {6, 5, 3}, factored);
    check_score_user(NcfKind::kNeuMf, 0, {6, 4}, factored);
    check_score_user(NcfKind::kMlp, 2, {6, 5, 3}, factored);
  }
  check_score_user(NcfKind::kGmf, 0, {6, 5, 3}, true);
}

TEST(Ncf, GmfGradients) {
  check_gradients(NcfKind::kGmf, 0);
}
TEST(Ncf, MlpGradients) {
  check_gradients(NcfKind::kMlp, 0);
}
TEST(Ncf, NeuMfGradients) {
  check_gradients(NcfKind::kNeuMf, 0);
}
TEST(Ncf, NeuMfWithContextGradients) {
  check_gradients(NcfKind::kNeuMf, 3);
}
TEST(Ncf, MlpWithContextGradients) {
  check_gradients(NcfKind::kMlp, 2);
}
TEST(Ncf, UnfactoredFirstLayerGradients) {
  check_gradients(NcfKind::kNeuMf, 3, false);
  check_gradients(NcfKind::kMlp, 0, false);
}
TEST(Ncf, OneLayerTowerGradients) {
  check_gradients(NcfKind::kNeuMf, 2, true, {6, 4});
  check_gradients(NcfKind::kMlp, 0, true, {6, 4});
  check_gradients(NcfKind::kNeuMf, 2, false, {6, 4});
}

// A set of rows over several calls, as a caller of Ncf's Rows runs it (train/ncf_shares.h does
// for the trainer's shares): the distinct ids listed, projected, the calls, the rows' backward
// with their gradients added into the tables' buffers.
template <class T>
struct RowSets {
  models::NcfRowSet<T> sets[2];
  void plan(Planner& planner, const Ncf<T>& m, Index max_ids) {
    const auto& c = m.config();
    const Index f = m.has_gmf() ? c.factors : 0;
    sets[0].plan(planner, "test.users.", c.num_users, max_ids, c.layers[1], c.layers[0] / 2, f);
    sets[1].plan(planner, "test.items.", c.num_items, max_ids, c.layers[1], c.layers[0] / 2, f);
  }
  typename Ncf<T>::Rows open(Ncf<T>& m, std::span<const int32_t> users,
                             std::span<const int32_t> items) {
    sets[0].list_ids(users);
    sets[1].list_ids(items);
    typename Ncf<T>::Rows rows;
    for (int s = 0; s < 2; ++s) {
      m.open_rows(s, sets[s]);
      sets[s].dz_clear = false;  // the calls add into the sums
      rows.proj[s] = sets[s].proj.view.data;
      rows.slot[s] = sets[s].slot.view.data;
      rows.dz[s] = sets[s].dz.view.data;
      rows.gmf[s] = sets[s].gmf_grads.view.data;
    }
    m.begin_chunks();
    return rows;
  }
  void close(Ncf<T>& m) {
    for (int s = 0; s < 2; ++s) m.close_rows(s, sets[s], /*add_to_tables=*/true);
    m.end_chunks();
  }
};

// The factored first layer against the one-Linear form: the same logits and gradients (to
// double rounding) over several calls into one share, as the trainer runs its chunks. The ids
// and tables are scaled by `scale`: at 1 the share's 12 ids cover the tables (their distinct
// rows are listed in ascending order, a sweep of the table), at 10 the tables have more than
// 4 rows per id (first-seen order, NcfRowSet::list_ids).
void factored_share_equals_unfactored(int32_t scale) {
  const Index n = 12, c = 3;
  auto make = [&](bool factored) {
    return Ncf<double>::Config{.kind = NcfKind::kNeuMf,
                               .num_users = 5 * scale,
                               .num_items = 7 * scale,
                               .factors = 3,
                               .layers = {8, 6, 4},
                               .context = c,
                               .embedding_std = 0.5,
                               .factored_first_layer = factored};
  };
  Ncf<double> a(make(true)), b(make(false));
  Buffer<double> ctx_a, ctx_b, dout_a, dout_b;
  RowSets<double> sets;
  Planner pa, pb;
  a.plan(pa, 4);
  b.plan(pb, 4);
  sets.plan(pa, a, n);
  pa.buffer(ctx_a, Region::kActivations, "context", {n, c});
  pb.buffer(ctx_b, Region::kActivations, "context", {n, c});
  pa.buffer(dout_a, Region::kActivationGrads, "dout", {n, 1});
  pb.buffer(dout_b, Region::kActivationGrads, "dout", {n, 1});
  Arena arena_a(std::move(pa)), arena_b(std::move(pb));
  RngStream ra(3, 1), rb(3, 1);
  a.init(ra);
  b.init(rb);
  testing::fill_uniform(ctx_a.view.data, ctx_a.view.numel(), 8);
  testing::fill_uniform(ctx_b.view.data, ctx_b.view.numel(), 8);
  testing::fill_uniform(dout_a.view.data, dout_a.view.numel(), 9);
  testing::fill_uniform(dout_b.view.data, dout_b.view.numel(), 9);
  std::vector<int32_t> users = {1, 3, 1, 0, 3, 4, 4, 1, 2, 3, 0, 1};
  std::vector<int32_t> items = {5, 0, 2, 5, 6, 0, 1, 2, 5, 5, 3, 0};
  for (int32_t& u : users) u *= scale;
  for (int32_t& i : items) i *= scale;
  const std::span<const int32_t> us(users), is(items);
  Ctx ctx;
  const Ncf<double>::Rows rows = sets.open(a, us, is);
  for (Index r0 = 0; r0 < n; r0 += 4) {
    const auto cu = static_cast<size_t>(r0);
    const MatView<double> la =
        a.forward(ctx, us.subspan(cu, 4), is.subspan(cu, 4), ctx_a.mat().rows_block(r0, 4), rows);
    const MatView<double> lb =
        b.forward(ctx, us.subspan(cu, 4), is.subspan(cu, 4), ctx_b.mat().rows_block(r0, 4));
    for (Index r = 0; r < 4; ++r) EXPECT_NEAR(la(r, 0), lb(r, 0), 1e-12) << r0 + r;
    a.backward(ctx, us.subspan(cu, 4), is.subspan(cu, 4), dout_a.mat().rows_block(r0, 4), rows);
    b.backward(ctx, us.subspan(cu, 4), is.subspan(cu, 4), dout_b.mat().rows_block(r0, 4));
  }
  sets.close(a);
  std::vector<std::pair<std::string, std::vector<double>>> ga, gb;
  a.for_each_param([&](const std::string& name, Param<double>& p) {
    if (p.kind == ParamKind::kDense) ga.push_back({name, {p.grad.begin(), p.grad.end()}});
  });
  b.for_each_param([&](const std::string& name, Param<double>& p) {
    if (p.kind == ParamKind::kDense) gb.push_back({name, {p.grad.begin(), p.grad.end()}});
  });
  for (size_t t = 0; t < a.tables().size(); ++t) {
    const auto ta = a.table_grad(t), tb = b.table_grad(t);
    std::vector<double> va, vb;
    for (Index r = 0; r < ta.grad.rows; ++r) {
      EXPECT_EQ(ta.touched[r], tb.touched[r]) << a.tables()[t].name << " row " << r;
      for (Index j = 0; j < ta.grad.cols; ++j) {
        va.push_back(ta.grad(r, j));
        vb.push_back(tb.grad(r, j));
      }
    }
    ga.push_back({a.tables()[t].name, va});
    gb.push_back({b.tables()[t].name, vb});
  }
  ASSERT_EQ(ga.size(), gb.size());
  double largest = 0;
  for (size_t k = 0; k < ga.size(); ++k) {
    ASSERT_EQ(ga[k].first, gb[k].first);
    ASSERT_EQ(ga[k].second.size(), gb[k].second.size());
    for (size_t i = 0; i < ga[k].second.size(); ++i) {
      EXPECT_NEAR(ga[k].second[i], gb[k].second[i], 1e-12) << ga[k].first << " " << i;
      largest = std::max(largest, std::abs(gb[k].second[i]));
    }
  }
  EXPECT_GT(largest, 1e-3);  // the gradients are not all zero

  // FLOPs: per instance 6·(11·6 + 6·4 + 7) for the Linears and predict, 3·3 for the GMF
  // product. The unfactored model executes that per instance less the context columns' dX
  // (2·3·6); the factored one does the first layer's 8 embedding columns per distinct row
  // (5 users, 6 items, E = 4) instead.
  EXPECT_DOUBLE_EQ(b.training_flops_per_instance(), 6.0 * (11 * 6 + 6 * 4 + 7) + 3.0 * 3);
  EXPECT_DOUBLE_EQ(b.executed_flops(), n * (b.training_flops_per_instance() - 2.0 * 3 * 6));
  EXPECT_DOUBLE_EQ(
      a.executed_flops(),
      n * (a.training_flops_per_instance() - 2.0 * 3 * 6 - 6.0 * 8 * 6) + 6.0 * (5 + 6) * 4 * 6);
}

TEST(Ncf, FactoredShareEqualsUnfactored) {
  factored_share_equals_unfactored(1);
}
TEST(Ncf, FactoredShareEqualsUnfactoredLargeTables) {
  factored_share_equals_unfactored(10);
}

// train_chunk's fused kernel (kernels/relu_tower.cpp) against forward + loss + backward layer by
// layer: the same losses, logits' effect and gradients to float rounding, over chunks of a
// share whose sizes are not whole tiles, with repeated ids, unused ids between them and a
// context width that is not a whole vector, for both kernel shapes.
void check_fused_chunk(std::vector<Index> layers, Index factors, Index c) {
  const Index n = 45, chunk = 20;
  auto make = [&](bool fused) {
    return Ncf<float>::Config{.kind = NcfKind::kNeuMf,
                              .num_users = 19,
                              .num_items = 27,
                              .factors = factors,
                              .layers = layers,
                              .context = c,
                              .embedding_std = 0.3,
                              .fused_tower = fused};
  };
  Ncf<float> a(make(true)), b(make(false));
  Buffer<float> ctx_a, ctx_b;
  RowSets<float> sets_a, sets_b;
  Planner pa, pb;
  a.plan(pa, chunk);
  b.plan(pb, chunk);
  sets_a.plan(pa, a, n);
  sets_b.plan(pb, b, n);
  pa.buffer(ctx_a, Region::kActivations, "context", {n, std::max<Index>(c, 1)});
  pb.buffer(ctx_b, Region::kActivations, "context", {n, std::max<Index>(c, 1)});
  Arena arena_a(std::move(pa)), arena_b(std::move(pb));
  RngStream ra(5, 1), rb(5, 1);
  a.init(ra);
  b.init(rb);
  testing::fill_uniform(ctx_a.view.data, ctx_a.view.numel(), 8);
  testing::fill_uniform(ctx_b.view.data, ctx_b.view.numel(), 8);
  std::vector<int32_t> users(static_cast<size_t>(n)), items(static_cast<size_t>(n));
  std::vector<float> labels(static_cast<size_t>(n));
  for (Index r = 0; r < n; ++r) {
    // Even ids only: a row's place among the share's distinct rows is not its id.
    users[static_cast<size_t>(r)] = static_cast<int32_t>(2 * ((r * 7 + r / 3) % 9));
    items[static_cast<size_t>(r)] = static_cast<int32_t>(2 * ((r * 5 + 1) % 13));
    labels[static_cast<size_t>(r)] = r % 5 == 0 ? 1.0f : 0.0f;
  }
  const std::span<const int32_t> us(users), is(items);
  Ctx ctx;
  const Ncf<float>::Rows rows_a = sets_a.open(a, us, is), rows_b = sets_b.open(b, us, is);
  EXPECT_TRUE(a.fused());
  EXPECT_FALSE(b.fused());
  const float scale = 1.0f / static_cast<float>(n);
  double loss_a = 0, loss_b = 0;
  for (Index r0 = 0; r0 < n; r0 += chunk) {
    const Index m = std::min(chunk, n - r0);
    const auto cu = static_cast<size_t>(r0), cm = static_cast<size_t>(m);
    loss_a += a.train_chunk(ctx, us.subspan(cu, cm), is.subspan(cu, cm),
                            ConstMat<float>(ctx_a.view.data + r0 * c, m, c), labels.data() + r0,
                            scale, rows_a);
    loss_b += b.train_chunk(ctx, us.subspan(cu, cm), is.subspan(cu, cm),
                            ConstMat<float>(ctx_b.view.data + r0 * c, m, c), labels.data() + r0,
                            scale, rows_b);
  }
  sets_a.close(a);
  sets_b.close(b);
  EXPECT_NEAR(loss_a, loss_b, 1e-5 * std::abs(loss_b));
  auto near = [](float x, float y) { return std::abs(x - y) <= 1e-6f + 1e-4f * std::abs(y); };
  std::vector<std::pair<std::string, Param<float>*>> pa_list, pb_list;
  a.for_each_param([&](const std::string& name, Param<float>& p) {
    pa_list.push_back({name, &p});
  });
  b.for_each_param([&](const std::string& name, Param<float>& p) {
    pb_list.push_back({name, &p});
  });
  ASSERT_EQ(pa_list.size(), pb_list.size());
  float largest = 0;
  for (size_t k = 0; k < pa_list.size(); ++k) {
    if (pa_list[k].second->kind != ParamKind::kDense) continue;
    const auto& ga = pa_list[k].second->grad;
    const auto& gb = pb_list[k].second->grad;
    for (Index i = 0; i < ga.numel(); ++i) {
      EXPECT_PRED2(near, ga.data[i], gb.data[i]) << pa_list[k].first << " " << i;
      largest = std::max(largest, std::abs(gb.data[i]));
    }
  }
  for (size_t t = 0; t < a.tables().size(); ++t) {
    const auto ta = a.table_grad(t), tb = b.table_grad(t);
    for (Index r = 0; r < ta.grad.rows; ++r) {
      EXPECT_EQ(ta.touched[r], tb.touched[r]) << a.tables()[t].name << " row " << r;
      for (Index j = 0; j < ta.grad.cols; ++j)
        EXPECT_PRED2(near, ta.grad(r, j), tb.grad(r, j)) << a.tables()[t].name << " " << r;
    }
  }
  EXPECT_GT(largest, 1e-3f);  // the gradients are not all zero
  EXPECT_DOUBLE_EQ(a.executed_flops(), b.executed_flops());
}
TEST(Ncf, FusedChunkEqualsLayerByLayer) {
  // Context widths 5, 6, 3: every tail (1, 2, 3 rows) of the context weight gradient's
  // 4-row blocks.
  check_fused_chunk({64, 32, 16, 8}, 8, 5);
  check_fused_chunk({64, 32, 16, 8}, 8, 6);
  check_fused_chunk({64, 32, 16, 8}, 8, 0);
  check_fused_chunk({128, 64, 32, 16}, 16, 3);
}

TEST(Ncf, ParameterNamesAndCounts) {
  // The target user's contextual NeuMF: 654 users, 1127 items, factors 8, MLP 85->32->16->8.
  Ncf<float> model({.kind = NcfKind::kNeuMf,
                    .num_users = 654,
                    .num_items = 1127,
                    .factors = 8,
                    .layers = {64, 32, 16, 8},
                    .context = 21});
  Planner planner;
  model.plan(planner, 4);
  Arena arena(std::move(planner));
  std::vector<std::string> names;
  Index total = 0;
  model.for_each_param([&](const std::string& name, Param<float>& p) {
    names.push_back(name);
    total += p.value.numel();
  });
  EXPECT_EQ(names, (std::vector<std::string>{
                       "mlp.0.weight", "mlp.0.bias", "mlp.1.weight", "mlp.1.bias", "mlp.2.weight",
                       "mlp.2.bias", "predict.weight", "predict.bias", "embed_user_gmf.weight",
                       "embed_item_gmf.weight", "embed_user_mlp.weight", "embed_item_mlp.weight"}));
  EXPECT_EQ(model.mlp_in(), 85);
  EXPECT_EQ(arena.find<float>("mlp.0.weight").shape, (Shape{32, 85}));
  // (654 + 1127)·(8 + 32) + 85·32 + 32 + 32·16 + 16 + 16·8 + 8 + 16 + 1 = 74,673 (spec).
  EXPECT_EQ(total, 74673);
  EXPECT_DOUBLE_EQ(model.forward_macs(), 85 * 32 + 32 * 16 + 16 * 8 + 16 + 8);
}

TEST(Ncf, RejectsBadConfig) {
  EXPECT_THROW(
      Ncf<float>({.kind = NcfKind::kMlp, .num_users = 2, .num_items = 2, .layers = {7, 4}}), Error);
  EXPECT_THROW(Ncf<float>({.kind = NcfKind::kMlp, .num_users = 2, .num_items = 2, .layers = {8}}),
               Error);
  EXPECT_THROW(Ncf<float>({.kind = NcfKind::kGmf, .num_users = 2, .num_items = 2, .context = 3}),
               Error);
  EXPECT_THROW(Ncf<float>({.kind = NcfKind::kGmf, .num_users = 0, .num_items = 2}), Error);
  EXPECT_THROW(models::parse_ncf_kind("ncf"), Error);
}

}  // namespace ncf_test
}  // namespace shoal
