#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "shoal/models/ncf.h"
#include "support/gradcheck.h"

namespace shoal {
namespace ncf_test {

using models::Ncf;
using models::NcfKind;

// Central differences through every parameter, tables included (their touched rows are
// scattered into dense arrays for the check), on awkward widths and repeated ids.
void check_gradients(NcfKind kind, Index context) {
  const Index n = 5;
  Ncf<double> model({.kind = kind,
                     .num_users = 4,
                     .num_items = 6,
                     .factors = 3,
                     .layers = {6, 5, 3},
                     .context = context,
                     .embedding_std = 0.5});
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
