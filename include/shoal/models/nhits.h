// NHITS (neuralforecast.models.NHITS; Challu et al., AAAI 2023): a stack of MLP blocks with
// doubly residual links, each block pooling its input and interpolating its forecast knots.
//   r₀ = flip(y) (the window, newest first)    ŷ = y_L (the last value, neuralforecast's
//   "Level with Naive1", in every output) + Σᵢ fᵢ, and for block i with pooling kᵢ,
//   downsampling dᵢ:
//     p = Pool_kᵢ(rᵢ) [B, ⌈L / kᵢ⌉]     θ = MLP([p | exog]) [B, L + M·Kᵢ], Kᵢ = max(⌊H / dᵢ⌋, 1)
//     rᵢ₊₁ = rᵢ − θ[:, :L]              fᵢ[:, h, q] = Interpolate_{Kᵢ→H}(θ[:, L + q·Kᵢ :][:Kᵢ])[h]
//   MLP: neuralforecast's block nn.Sequential (models/theta_mlp.h), L + M·Kᵢ out. The knots are
//   output-major ([M, Kᵢ], neuralforecast's reshape), each output interpolated on its own, and
//   the forecast step-major [H, M] (its permute): ŷ is [B, H, M], element h·M + q.
// exog: the exogenous inputs pooled with the block's kernel as neuralforecast pools them (hist
// over L, futr over L + H, each flattened time-major), then the statics; they come in shoal's
// layout (models/forecast.h) and are data, unless Config::exog_grads asks for their gradients
// (exog_grads(): each block's MLP input gradient through its poolings, summed over the blocks).
// A univariate model (N = 1); M outputs per forecast value (a multi-output loss's, set by the
// shape, not an option); rᵢ₊₁ is masked by the window's insample mask, as neuralforecast masks
// it (models/residual_stack.h).
// Parameter names are neuralforecast's state_dict keys, blocks.<i>.layers.<j>.{weight,bias}
// with j the index in its nn.Sequential (activations and dropouts take indices too; a PReLU's
// one weight is shared by every activation of its block and named at its first index).
// Init: torch's module order (every block's Linears in turn), so a Generator::kTorchCpu stream
// seeded with random_seed reproduces neuralforecast's weights. Legend: B windows, L input_size,
// H horizon, P pooled length, K knots, u hidden units, M outputs per forecast value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shoal/models/residual_stack.h"

namespace shoal::models {

struct NHITSConfig : ForecastConfig<NHITSConfig>, StackOptions {
  static constexpr ForecastKind kKind{.name = "nhits",
                                      .class_name = "NHITS",
                                      .hist_exog = true,
                                      .futr_exog = true,
                                      .stat_exog = true,
                                      .defaults = kStackDefaults};
  std::vector<int64_t> n_pool_kernel_size = {2, 2, 1};
  std::vector<int64_t> n_freq_downsample = {4, 2, 1};
  std::string pooling_mode = "MaxPool1d";
  std::string interpolation_mode = "linear";

  NHITSConfig() { stack_types = {"identity", "identity", "identity"}; }
  void visit(OptionVisitor& v);
  void validate_options() const;
};

template <class T>
struct NHitsBlock;  // pool → MLP → θ = [backcast | knots] → interpolated forecast

template <class T>
class NHITS : public ResidualStackModel<NHITS<T>, T, NHITSConfig, NHitsBlock<T>>,
              public ExogGradBuffers<T> {
  using Base = ResidualStackModel<NHITS<T>, T, NHITSConfig, NHitsBlock<T>>;
  friend Base;
  friend struct NHitsBlock<T>;

 public:
  explicit NHITS(NHITSConfig cfg);

 private:
  // The stack's hooks (models/residual_stack.h): the buffers below; dout output-major for the
  // blocks (M > 1) and the exogenous gradients zeroed, for the blocks to sum into.
  void plan_inputs(Planner& planner, Index max_batch);
  ConstMat<T> before_backward(const ForecastInputs<T>& in, ConstMat<T> dout);

  Buffer<T> knots_out_;  // [B, M·H] interpolated per output (M > 1)
  Buffer<T> dyq_;        // [B, M·H] dout output-major (M > 1)
  // exog_grads: a block's unpooled share of dhist_ and dfutr_.
  Buffer<T> dhist_block_, dfutr_block_;
};

}  // namespace shoal::models
