// The doubly residual stack of NBEATS, NBEATSx and NHITS (Oreshkin et al., ICLR 2020): blocks
// walked in order, each reading the residual its predecessors left and subtracting its own
// backcast from it, their forecasts summed on top of the level.
//   out = y_L (every step starts at the window's last value, neuralforecast's "Level with
//   Naive1"),  r₀ = flip(y) (the window, newest first)
//   block i: (backᵢ, foreᵢ) = fᵢ(rᵢ),  rᵢ₊₁ = (rᵢ − backᵢ) ⊙ m,  out += foreᵢ
// m: the window's insample mask, flipped like r (neuralforecast's: a window whose input starts
// before its series, padded with zeros, keeps zero residuals there); all ones without one.
// Backward, with dr the gradient of the loss w.r.t. the residual leaving block i (0 for the
// last block, whose residual is not used): g = dr ⊙ m is the gradient of rᵢ − backᵢ; block i's
// backcast gets −g, its forecast dout, and dr becomes g plus its input's gradient before block
// i − 1; block 0's input is the data.
// With M outputs per step (a multi-output loss) out is neuralforecast's [B, H, M]: the level
// fills every output, and a block's forecast is either [B, H, M] (added as it is) or [B, H] (an
// NBEATSx exogenous block, whose one output torch broadcasts over the M).
// ResidualStackModel holds what the three models share: their options, blocks (each with a
// ThetaMLP `mlp`), shared weights, parameters, planning, profiler zones, these two walks and the
// model's interface; a model adds its blocks and what each block computes.
// Legend: B windows, L input_size, H horizon, M outputs per forecast value.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shoal/core/options.h"
#include "shoal/layers/nbeats_basis.h"
#include "shoal/layers/view_ops.h"
#include "shoal/models/forecast_model.h"
#include "shoal/models/theta_mlp.h"
#include "shoal/models/zones.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

// An NBEATS / NBEATSx stack type's basis ("trend", "seasonality"; anything else: identity).
inline layers::BasisKind basis_kind(std::string_view stack) {
  if (stack == "trend") return layers::BasisKind::kTrend;
  if (stack == "seasonality") return layers::BasisKind::kSeasonality;
  return layers::BasisKind::kIdentity;
}

// x ⊙ flip(mask) over each window's L steps (the residuals run newest first).
template <class T>
void mask_flipped(const ForecastInputs<T>& in, Index L, MatView<T> x) {
  for (Index w = 0; w < in.batch; ++w) {
    const T* m = in.insample_mask + w * L;
    for (Index t = 0; t < L; ++t) x(w, t) *= m[L - 1 - t];
  }
}

// `input(i)`: block i's input rows [B, ≥ L], whose first L columns take its residual.
// `run(i, input)`: runs block i, returning {backcast [B, L], forecast [B, H·M] or [B, H]}.
// out [B, H·M]; returns it as the trainer's [B·H, N·M] (N = 1).
template <class T, class Input, class Run>
MatView<T> residual_stack_forward(const ForecastInputs<T>& in, Index L, Index H, Index M,
                                  MatView<T> out, std::span<const profile::LayerZones> zones,
                                  profile::ZoneChain& zone, Input&& input, Run&& run) {
  const Index B = in.batch;
  for (Index w = 0; w < B; ++w)
    std::fill(out.row(w), out.row(w) + H * M, in.insample_y[w * L + L - 1]);
  if (zones.empty()) return MatView<T>(out.data, B * H, M);
  MatView<T> r0 = input(size_t(0));
  for (Index w = 0; w < B; ++w)
    for (Index t = 0; t < L; ++t) r0(w, t) = in.insample_y[w * L + L - 1 - t];
  for (size_t i = 0; i < zones.size(); ++i) {
    zone.next(zones[i].forward);
    const MatView<T> r = input(i);
    const auto [back, fore] = run(i, r);
    if (i + 1 < zones.size()) {
      MatView<T> next = input(i + 1);
      for (Index w = 0; w < B; ++w)
        for (Index t = 0; t < L; ++t) next(w, t) = r(w, t) - back(w, t);
      if (in.insample_mask != nullptr) mask_flipped(in, L, next);
    }
    if (fore.cols == out.cols) {
      layers::add_into<T>(fore, out);
    } else {
      for (Index w = 0; w < B; ++w)
        for (Index t = 0; t < H; ++t)
          for (Index q = 0; q < M; ++q) out(w, t * M + q) += fore(w, t);
    }
  }
  return MatView<T>(out.data, B * H, M);
}

// `back(i, dr, dinput)`: block i's backward, its backcast's gradient being −dr; it writes the
// gradient w.r.t. its residual input into dinput [B, L] (empty for block 0: the data).
// dr and dinput are the model's [B, L] buffers.
template <class T, class Back>
void residual_stack_backward(const ForecastInputs<T>& in, Index L, MatView<T> dr, MatView<T> dinput,
                             std::span<const profile::LayerZones> zones, profile::ZoneChain& zone,
                             Back&& back) {
  const Index B = in.batch;
  for (Index w = 0; w < B; ++w) std::fill(dr.row(w), dr.row(w) + L, T(0));
  for (size_t i = zones.size(); i-- > 0;) {
    zone.next(zones[i].backward);
    if (in.insample_mask != nullptr && i + 1 < zones.size()) mask_flipped(in, L, dr);
    back(i, ConstMat<T>(dr), i > 0 ? dinput : MatView<T>{});
    if (i > 0) layers::add_into<T>(dinput, dr);
  }
}

// neuralforecast's defaults for the stacked models' shared options: 1,024 windows per step,
// every window of a series at inference, three learning-rate decays.
inline constexpr JobDefaults kStackDefaults{
    .num_lr_decays = 3, .windows_batch_size = 1024, .inference_windows_batch_size = -1};

// The options the stacked models share, with neuralforecast's names and defaults (NHITS's
// Config sets its own stack_types): the stacks, each block's MLP and its activation.
struct StackOptions {
  std::vector<std::string> stack_types = {"identity", "trend", "seasonality"};
  std::vector<int64_t> n_blocks = {1, 1, 1};
  // neuralforecast's list of [in, out] pairs, flattened: 3 * [[512, 512]].
  std::vector<int64_t> mlp_units = {512, 512, 512, 512, 512, 512};
  double dropout_prob_theta = 0.0;
  std::string activation = "ReLU";

  // stack_types (its help `stacks`), n_blocks, mlp_units.
  void visit_stacks(OptionVisitor& v, const char* stacks);
  // dropout_prob_theta (its help `dropout`), activation.
  void visit_theta(OptionVisitor& v, const char* dropout);
  // One n_blocks ≥ 0 per stack, each stack type one of `types` (with h = 1, identity only: the
  // trend and seasonality bases need two steps), the block options; errors name `model`.
  void validate_stacks(std::string_view model, std::span<const std::string_view> types,
                       Index h) const;
};

// The base of NBEATS, NBEATSx and NHITS, which states their interface once: a model is its
// Config, its Block and what its blocks share (Model, the model itself). The walks are here;
// residual_stack_impl.h defines them, instantiated by each model's source, where its Block is
// complete (a Block may be incomplete where the model is used).
// Block: holds a `ThetaMLP<T> mlp` and `Buffer<T> r` (its input rows [B, ≥ L], the residual
// first), and defines
//   plan(planner, B, model)          its buffers, under "blocks.<i>." after its MLP's
//   init(rng)                        its draws, in torch's module order
//   forward(ctx, in, r, model)       → {backcast [B, L], forecast [B, H·M] or [B, H]}
//   backward(ctx, in, dy, dr, dinput, model)   dy: the forecast's gradient [B, H·M] (as the
//                                    model's before_backward leaves it), dr the residual's;
//                                    dinput empty for block 0
//   forward_cost(rows, model), backward_cost(rows, dinput, model)   per window
// Model may shadow the hooks below (the defaults do nothing): what it gathers for every block
// before the walks, and scatters after.
// Parameters: blocks.<i>.layers.<j>.{weight,bias} (a shared MLP under its first block only).
template <class Model, class T, class C, class Block>
class ResidualStackModel : public ForecastModel<C> {
  using Base = ForecastModel<C>;

 public:
  // Profiler zones "blocks.<i>" (rows = windows), recorded when ctx.profiler is set.
  SHOAL_WINDOW_MODEL_MEMBERS;
  void init(RngStream& rng);

  template <class F>
  void for_each_param(F&& f) {
    for (size_t i = 0; i < mlps_.size(); ++i) {
      const std::string prefix = "blocks." + std::to_string(i) + ".layers.";
      mlps_[i]->for_each_param([&](const std::string& n, Param<T>& p) { f(prefix + n, p); });
    }
  }

 protected:
  using Base::batch_rows;
  using Base::cfg_;

  explicit ResidualStackModel(C cfg);
  ~ResidualStackModel();

  // Appends a block for each of the Config's stacks' n_blocks, make(stack, index) building it;
  // with `shared` a stack's later blocks run on the MLP weights of its first (torch reuses the
  // module).
  template <class Make>
  void add_blocks(bool shared, Make&& make) {
    for (size_t s = 0; s < cfg_.stack_types.size(); ++s)
      for (int64_t b = 0; b < cfg_.n_blocks[s]; ++b) {
        owner_.push_back(shared && b > 0 ? owner_.back() : blocks_.size());
        blocks_.push_back(make(s, blocks_.size()));
        mlps_.push_back(&blocks_.back()->mlp);
      }
    zones_.resize(blocks_.size());
  }

  // The hooks (Model shadows those it needs): its buffers, planned after the blocks'; before
  // the forward walk; before the backward walk, returning the forecast's gradient [B, H·M] the
  // blocks read; after it.
  void plan_inputs(Planner&, Index) {}
  void before_forward(const ForecastInputs<T>&) {}
  ConstMat<T> before_backward(const ForecastInputs<T>& in, ConstMat<T> dout) {
    return ConstMat<T>(dout.data, in.batch, cfg_.h * cfg_.outputs);
  }
  void after_backward(const ForecastInputs<T>&) {}

  std::vector<std::unique_ptr<Block>> blocks_;
  std::vector<ThetaMLP<T>*> mlps_;          // each block's MLP
  std::vector<size_t> owner_;               // the block whose weights block i runs on
  std::vector<profile::LayerZones> zones_;  // one per block
  Buffer<T> out_;                           // [B, H·M]
  Buffer<T> dr_;                            // [B, L] gradient of the residual between blocks
  Buffer<T> drb_;                           // [B, L] a block's own share of it

 private:
  Model& self() { return static_cast<Model&>(*this); }
};

// ∂L/∂backcast = −dr into d [B, L].
template <class T>
void negate_into(ConstMat<T> dr, MatView<T> d) {
  for (Index w = 0; w < dr.rows; ++w)
    for (Index t = 0; t < dr.cols; ++t) d(w, t) = -dr(w, t);
}

}  // namespace shoal::models
