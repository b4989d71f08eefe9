// Gradient checks (double, central differences) of PatchTST's encoder layer
// (layers/tst_encoder_layer.h): post- and pre-norm, GELU and ReLU, dropouts in training, with
// residual attention (a prior from a previous layer and the scores handed on, both with their
// gradients) and without; every parameter and the input. And its parameters in
// neuralforecast's order and names.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "shoal/layers/tst_encoder_layer.h"
#include "support/gradcheck.h"

namespace shoal {
namespace tst_encoder_layer_test {

using layers::TSTEncoderLayer;

void check(bool pre_norm, bool gelu, bool res, double dropout) {
  const Index windows = 2, tokens = 4, hidden = 6, heads = 2, rows = windows * tokens;
  TSTEncoderLayer<double> layer({.hidden_size = hidden,
                                 .n_heads = heads,
                                 .linear_hidden_size = 7,
                                 .tokens = tokens,
                                 .dropout = dropout,
                                 .attention_dropout = dropout / 2,
                                 .gelu = gelu,
                                 .res_attention = res,
                                 .pre_norm = pre_norm,
                                 .stream = 8});
  Planner planner;
  layer.plan(planner, rows);
  Arena arena(std::move(planner));
  RngStream init(4, 1);
  layer.init(init);
  // BatchNorm starts at weight 1, bias 0: move them so their gradients are exercised too.
  layer.for_each_param([&](const std::string& name, Param<double>& p) {
    if (name.find("norm") != std::string::npos)
      testing::fill_uniform(p.value.data, p.value.numel(), 9, 0.5, 1.5);
  });
  const Index n_scores = windows * heads * tokens * tokens;
  std::vector<double> x(size_t(rows * hidden)), y(x.size()), dy(x.size()), dx(x.size()),
      prior(static_cast<size_t>(n_scores)), dprior(prior.size()), dscores(prior.size());
  testing::fill_uniform(x.data(), rows * hidden, 5, -1, 1);
  testing::fill_uniform(prior.data(), n_scores, 6, -1, 1);
  // Gradients zero in exact arithmetic hold only rounding, which central differences cannot
  // resolve: W_K's bias (the row softmax cancels it) and, post-norm, the biases whose
  // per-feature shift reaches a BatchNorm unchanged (W_V's: the weights of a row sum to 1;
  // to_out's; ff.3's), without dropout (whose masks differ element by element). They are
  // checked to be zero instead. (W_K's bias moves the scores handed on, whose gradient here is
  // random: with residual attention it is checked as any other.)
  std::vector<testing::GradVar> vars;
  std::vector<Param<double>*> zero;
  layer.for_each_param([&](const std::string& name, Param<double>& p) {
    const bool cancelled =
        dropout == 0 && ((!res && name == "self_attn.W_K.bias") ||
                         (!pre_norm && (name == "self_attn.W_V.bias" ||
                                        name == "self_attn.to_out.0.bias" || name == "ff.3.bias")));
    if (cancelled)
      zero.push_back(&p);
    else
      vars.push_back({name, p.value.data, p.grad.data, p.value.numel(), true});
  });
  vars.push_back({"x", x.data(), dx.data(), rows * hidden, false});
  std::vector<testing::GradOut> outs = {{y.data(), dy.data(), rows * hidden}};
  if (res) {
    vars.push_back({"prior", prior.data(), dprior.data(), n_scores, false});
    outs.push_back({layer.scores.view.data, dscores.data(), n_scores});
  }
  const Ctx ctx{.training = true, .seed = 5, .step = 3};
  const MatView<double> xv(x.data(), rows, hidden), yv(y.data(), rows, hidden),
      dyv(dy.data(), rows, hidden), dxv(dx.data(), rows, hidden);
  const auto res_check = testing::gradcheck(
      vars, outs, [&] { layer.forward(ctx, xv, yv, 0, res ? prior.data() : nullptr); },
      [&] {
        layer.backward(ctx, xv, yv, dyv, dxv, 0, res ? dscores.data() : nullptr,
                       res ? dprior.data() : nullptr);
      });
  for (Param<double>* p : zero) std::fill(p->grad.begin(), p->grad.end(), 0.0);
  layer.forward(ctx, xv, yv, 0, res ? prior.data() : nullptr);
  layer.backward(ctx, xv, yv, dyv, dxv, 0, res ? dscores.data() : nullptr,
                 res ? dprior.data() : nullptr);
  for (Param<double>* p : zero)
    for (const double g : p->grad) EXPECT_LE(std::abs(g), 1e-12);
  EXPECT_LE(res_check.max_rel_error, 1e-6)
      << (pre_norm ? "pre" : "post") << "-norm " << (gelu ? "gelu" : "relu")
      << (res ? " residual" : "") << " dropout " << dropout << ": " << res_check.worst;
}

TEST(TSTEncoderLayer, GradientsMatchCentralDifferences) {
  check(false, true, true, 0.0);
  check(false, false, true, 0.3);
  check(true, true, true, 0.2);
  check(true, false, false, 0.0);
  check(false, true, false, 0.25);
}

TEST(TSTEncoderLayer, ParametersAreNeuralforecastsInItsOrder) {
  TSTEncoderLayer<float> layer(
      {.hidden_size = 8, .n_heads = 2, .linear_hidden_size = 5, .tokens = 3});
  Planner planner;
  layer.plan(planner, 6);
  Arena arena(std::move(planner));
  std::vector<std::string> names;
  layer.for_each_param([&](const std::string& name, Param<float>&) { names.push_back(name); });
  const std::vector<std::string> want = {"self_attn.W_Q.weight",
                                         "self_attn.W_Q.bias",
                                         "self_attn.W_K.weight",
                                         "self_attn.W_K.bias",
                                         "self_attn.W_V.weight",
                                         "self_attn.W_V.bias",
                                         "self_attn.to_out.0.weight",
                                         "self_attn.to_out.0.bias",
                                         "norm_attn.1.weight",
                                         "norm_attn.1.bias",
                                         "ff.0.weight",
                                         "ff.0.bias",
                                         "ff.3.weight",
                                         "ff.3.bias",
                                         "norm_ffn.1.weight",
                                         "norm_ffn.1.bias"};
  EXPECT_EQ(names, want);
}

}  // namespace tst_encoder_layer_test
}  // namespace shoal
