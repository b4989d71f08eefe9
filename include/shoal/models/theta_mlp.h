// The MLP of an NBEATS, NBEATSx or NHITS block, as neuralforecast builds its nn.Sequential:
//   Linear(I, u₀₀), then per mlp_units pair (a, b): Linear(a, b), activation, dropout (only when
//   p > 0), then Linear(b_last, S) → θ [N, S]
// The first Linear has no activation after it. The block's one activation module is reused
// after every hidden Linear, so a PReLU's single weight is shared by all of them. ReLU is fused
// into its Linear; the others run as layers after it (layers/pointwise.h).
// Names are the Sequential's: "<j>.weight", "<j>.bias" with j the module index (activations and
// dropouts take indices too); a PReLU's weight is "<j>.weight" at its first index and is listed
// after the Linear that precedes it, as torch's named_parameters lists it. Init: the Linears in
// order (torch's), PReLU 0.25. Shapes: x [N, I], θ [N, S], hidden [N, u]. Legend: N rows.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/layers/dropout.h"
#include "shoal/layers/linear.h"
#include "shoal/layers/pointwise.h"
#include "shoal/profile/cost.h"

namespace shoal::models {

enum class BlockActivation : uint8_t {
  kReLU,
  kSoftplus,
  kTanh,
  kSELU,
  kLeakyReLU,
  kPReLU,
  kSigmoid
};

// neuralforecast's ACTIVATIONS list, in BlockActivation's order.
inline constexpr std::string_view kBlockActivations[] = {"ReLU",      "Softplus", "Tanh",   "SELU",
                                                         "LeakyReLU", "PReLU",    "Sigmoid"};
// Throws Error naming the choices when `name` is not one of them.
BlockActivation parse_block_activation(const std::string& name);
// The options every stacked model's blocks share (NHITS, NBEATS, NBEATSx): mlp_units as
// flattened [in, out] pairs that chain, dropout_prob_theta in [0, 1), a known activation.
// Errors name `model`.
void validate_block_options(std::string_view model, const std::vector<int64_t>& mlp_units,
                            double dropout_prob_theta, const std::string& activation);

template <class T>
struct ThetaMLP {
  struct Config {
    Index in = 0;                    // I
    std::vector<int64_t> mlp_units;  // [a, b] pairs, flattened; each a equals the previous b
    Index out = 0;                   // S
    BlockActivation activation = BlockActivation::kReLU;
    double dropout = 0.0;
    uint64_t stream = 0;  // dropout streams stream … stream + M − 1
  };

  Config cfg;
  Index M;                                // hidden Linears with an activation
  std::vector<layers::Linear<T>> lins;    // M + 2
  std::vector<Index> seq;                 // each Linear's index in the nn.Sequential
  Index act_seq = 0;                      // the first activation's index
  std::vector<layers::Dropout<T>> drops;  // M
  layers::Softplus<T> softplus;
  layers::Tanh<T> tanh;
  layers::SELU<T> selu;
  layers::LeakyReLU<T> leaky;
  layers::PReLU<T> prelu;
  layers::Sigmoid<T> sigmoid;
  std::vector<Buffer<T>> a;     // M + 1 outputs [N, u] of Linear₀ and each activation/dropout
  std::vector<Buffer<T>> z;     // pre-activations (not with ReLU)
  std::vector<Buffer<T>> hact;  // activation outputs before dropout (non-ReLU with dropout)
  std::vector<Buffer<T>> da;    // M + 1
  Buffer<T> dz;                 // scratch [N, widest u]
  ThetaMLP* owner = nullptr;    // whose parameters this one runs on (shared weights)

  explicit ThetaMLP(Config c);

  bool fused_relu() const { return cfg.activation == BlockActivation::kReLU; }
  bool keeps_act_out() const { return !fused_relu() && cfg.dropout > 0; }
  Index width(Index m) const { return lins[size_t(m)].cfg.out; }

  template <class F>
  void for_each_param(F&& f) {
    if (owner != nullptr) return;  // the owner lists them
    for (size_t m = 0; m < lins.size(); ++m) {
      lins[m].for_each_param([&](std::string_view n, Param<T>& p) {
        f(std::to_string(seq[m]) + "." + std::string(n), p);
      });
      if (m == 1 && cfg.activation == BlockActivation::kPReLU)
        f(std::to_string(act_seq) + ".weight", prelu.p.weight);
    }
  }
  // With `owner`, this MLP plans activations only and runs on owner's parameters (a block of
  // a stack with shared_weights: torch reuses the module, so the weights and their gradients
  // are one); for_each_param and init then belong to the owner alone.
  void plan(Planner& planner, Index max_rows, ThetaMLP* owner = nullptr);
  void init(RngStream& rng);
  // row0: the first row's index in the whole batch (dropout masks).
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> theta, Index row0 = 0);
  // Reads θ's gradient; dx overwritten, or skipped when it has no data.
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> theta, ConstMat<T> dtheta, MatView<T> dx,
                Index row0 = 0);
  // Columns [c0, c0 + dx.cols) of the last backward's input gradient [N, I], written (added to
  // when `accumulate`) without forming the others: a model's exogenous columns, apart from
  // the residual's that backward's dx takes, whose values then stay those of a backward alone.
  // The first Linear has no activation, so this is da₀ · W₀[:, c0 : c0 + dx.cols].
  void input_grad_columns(Index c0, MatView<T> dx, bool accumulate) const;

  profile::Cost forward_cost(double rows) const;
  profile::Cost backward_cost(double rows, bool dx = true) const;
  profile::Cost input_grad_columns_cost(double rows, double cols) const;

 private:
  void bind_shared();  // points the layers' parameter views at the owner's
  void act_forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y);
  void act_backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy, MatView<T> dx);
  double act_flops(bool grad) const;
};

}  // namespace shoal::models
