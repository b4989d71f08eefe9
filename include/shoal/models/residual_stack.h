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
// ResidualStackModel holds what the three models share: their blocks (each with a ThetaMLP
// `mlp`), shared weights, parameters, planning, profiler zones and these two walks; a model
// adds its blocks and what each block computes.
// Legend: B windows, L input_size, H horizon, M outputs per forecast value.
#pragma once

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// The base of NBEATS, NBEATSx and NHITS. Block: the model's block, with a `ThetaMLP<T> mlp`,
// and `Buffer<T> r` (its input rows [B, ≥ L], the residual first); it may be incomplete where
// the model is used (the model's .cpp defines it, its init and its destructor).
// Parameters: blocks.<i>.layers.<j>.{weight,bias} (a shared MLP under its first block only).
template <class T, class C, class Block>
class ResidualStackModel : public ForecastModel<C> {
  using Base = ForecastModel<C>;

 public:
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

  explicit ResidualStackModel(C cfg) : Base(std::move(cfg)) {}
  ~ResidualStackModel() = default;

  // Appends a block; `shared`: it runs on the MLP weights of the block before it (that block's
  // owner: a stack's later blocks with shared_weights, as torch reuses the module).
  void add_block(std::unique_ptr<Block> b, bool shared) {
    owner_.push_back(shared ? owner_.back() : blocks_.size());
    mlps_.push_back(&b->mlp);
    blocks_.push_back(std::move(b));
    zones_.resize(blocks_.size());
  }
  // Plans each block under "blocks.<i>.", its MLP under "layers." (on its owner's weights when
  // shared), then what plan_block(i, block) plans; then what plan_inputs() plans (the model's
  // gathered inputs), the stack's output and residual gradients.
  template <class PlanBlock, class PlanInputs>
  void plan_blocks(Planner& planner, Index max_batch, PlanBlock&& plan_block,
                   PlanInputs&& plan_inputs) {
    this->set_max_batch(max_batch);
    const Index B = max_batch, L = cfg_.input_size;
    for (size_t i = 0; i < blocks_.size(); ++i) {
      planner.push_scope("blocks." + std::to_string(i) + ".");
      planner.push_scope("layers.");
      blocks_[i]->mlp.plan(planner, B, owner_[i] != i ? mlps_[owner_[i]] : nullptr);
      planner.pop_scope();
      plan_block(i, *blocks_[i]);
      planner.pop_scope();
    }
    plan_inputs();
    planner.buffer(out_, Region::kActivations, "out", {B, cfg_.h * cfg_.outputs});
    planner.buffer(dr_, Region::kActivationGrads, "dr", {B, L});
    planner.buffer(drb_, Region::kScratch, "drb", {B, L});
  }
  // residual_stack_forward over the blocks: run(i, block, input) → {backcast, forecast}.
  template <class Run>
  MatView<T> forward_blocks(const Ctx& ctx, const ForecastInputs<T>& in, Run&& run) {
    const Index B = in.batch;
    profile::ZoneChain zone(ctx.profiler, B);
    return residual_stack_forward<T>(
        in, cfg_.input_size, cfg_.h, cfg_.outputs, batch_rows(out_, B), zones_, zone,
        [&](size_t i) { return batch_rows(blocks_[i]->r, B); },
        [&](size_t i, MatView<T> r) { return run(i, *blocks_[i], r); });
  }
  // residual_stack_backward over the blocks: back(i, block, dr, dinput).
  template <class Back>
  void backward_blocks(const Ctx& ctx, const ForecastInputs<T>& in, Back&& back) {
    const Index B = in.batch;
    profile::ZoneChain zone(ctx.profiler, B);
    residual_stack_backward<T>(
        in, cfg_.input_size, batch_rows(dr_, B), batch_rows(drb_, B), zones_, zone,
        [&](size_t i, ConstMat<T> dr, MatView<T> dinput) { back(i, *blocks_[i], dr, dinput); });
  }
  // Zones "blocks.<i>", their costs per window fwd(i, block, rows) and bwd(i, block, rows).
  template <class Fwd, class Bwd>
  void register_block_zones(profile::Recorder& rec, int model, Fwd&& fwd, Bwd&& bwd) {
    for (size_t i = 0; i < blocks_.size(); ++i) {
      const Block& b = *blocks_[i];
      zones_[i] = cost_zones(
          rec, model, "blocks." + std::to_string(i), 1,
          [&](double rows) { return fwd(i, b, rows); },
          [&](double rows) { return bwd(i, b, rows); });
    }
  }
  // ∂L/∂backcast = −dr into d [B, L].
  static void negate_into(ConstMat<T> dr, MatView<T> d) {
    for (Index w = 0; w < dr.rows; ++w)
      for (Index t = 0; t < dr.cols; ++t) d(w, t) = -dr(w, t);
  }

  std::vector<std::unique_ptr<Block>> blocks_;
  std::vector<ThetaMLP<T>*> mlps_;          // each block's MLP
  std::vector<size_t> owner_;               // the block whose weights block i runs on
  std::vector<profile::LayerZones> zones_;  // one per block
  Buffer<T> out_;                           // [B, H·M]
  Buffer<T> dr_;                            // [B, L] gradient of the residual between blocks
  Buffer<T> drb_;                           // [B, L] a block's own share of it
};

}  // namespace shoal::models
