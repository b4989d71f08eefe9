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
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shoal/core/options.h"
#include "shoal/layers/interpolate1d.h"
#include "shoal/layers/pool1d.h"
#include "shoal/models/forecast.h"
#include "shoal/models/theta_mlp.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

template <class T>
class NHITS {
 public:
  struct Config {
    Index h = 0;
    Index input_size = 0;
    Index n_series = 1;
    std::vector<std::string> stack_types = {"identity", "identity", "identity"};
    std::vector<int64_t> n_blocks = {1, 1, 1};
    // neuralforecast's list of [in, out] pairs, flattened: 3 * [[512, 512]].
    std::vector<int64_t> mlp_units = {512, 512, 512, 512, 512, 512};
    std::vector<int64_t> n_pool_kernel_size = {2, 2, 1};
    std::vector<int64_t> n_freq_downsample = {4, 2, 1};
    std::string pooling_mode = "MaxPool1d";
    std::string interpolation_mode = "linear";
    double dropout_prob_theta = 0.0;
    std::string activation = "ReLU";
    Index hist_exog = 0;      // X, from the data
    Index futr_exog = 0;      // F
    Index stat_exog = 0;      // S
    Index outputs = 1;        // M, from the loss (not an option)
    bool exog_grads = false;  // from the shape (not an option)

    void visit(OptionVisitor& v);
    void validate() const;
    void set_shape(const WindowShape& s);
  };

  // Each window is mapped on its own: a trainer may run a batch in chunks.
  static constexpr bool kWindowsIndependent = true;
  // A batch runs whole: the block weights, not the windows, are the traffic. NHITS at its
  // defaults (h 12, input_size 24, 1,024 windows), ms per training step on 2 loaded cores:
  // whole 173, chunks of 64 286, chunks of 8 1207 (TiDE 83 | 126 | 346).
  static constexpr Index kChunkWindows = 0;

  explicit NHITS(Config cfg);
  ~NHITS();
  NHITS(const NHITS&) = delete;
  NHITS& operator=(const NHITS&) = delete;

  const Config& config() const { return cfg_; }
  Index horizon() const { return cfg_.h; }
  Index n_series() const { return cfg_.n_series; }

  void plan(Planner& planner, Index max_batch);
  void init(RngStream& rng);
  // Returns the forecasts [B·H, M] (a view of the model's output buffer); dout likewise.
  MatView<T> forward(const Ctx& ctx, const ForecastInputs<T>& in);
  void backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout);
  // ∂L/∂exog of the last backward (models/forecast.h); planned with Config::exog_grads only.
  ExogGrads<T> exog_grads() const { return {dhist_.view.data, dfutr_.view.data, dstat_.view.data}; }
  // Profiler zones "blocks.<i>" (rows = windows), recorded when ctx.profiler is set.
  void register_zones(profile::Recorder& rec, int model = 0);

  template <class F>
  void for_each_param(F&& f) {
    for (size_t i = 0; i < blocks_.size(); ++i)
      each_block_param(i, [&](const std::string& name, Param<T>& p) { f(name, p); });
  }

  struct Block;

 private:
  void each_block_param(size_t i, const std::function<void(const std::string&, Param<T>&)>& f);
  // Writes block b's pooled exogenous inputs into the MLP input x [B, W] after the residual.
  void pool_exog(const Ctx& ctx, Block& b, const ForecastInputs<T>& in, MatView<T> x);
  // Adds block b's MLP input gradient's exogenous columns dx [B, W − P], taken back through its
  // poolings, into dhist_, dfutr_ and dstat_.
  void add_exog_grads(const Ctx& ctx, Block& b, const ForecastInputs<T>& in, ConstMat<T> dx);

  Config cfg_;
  std::vector<std::unique_ptr<Block>> blocks_;
  std::vector<profile::LayerZones> zones_;  // one per block
  Buffer<T> out_;                           // [B, H·M]
  Buffer<T> knots_out_;                     // [B, M·H] interpolated per output (M > 1)
  Buffer<T> dyq_;                           // [B, M·H] dout output-major (M > 1)
  Buffer<T> dr_;                            // [B, L] gradient of the residual between blocks
  Buffer<T> drb_;                           // [B, L] a block's own share of it
  // exog_grads: [B·X, L], [B·F, L + H], [B, S] (a row per window, or their [1, S] sum), and a
  // block's unpooled share of the first two.
  Buffer<T> dhist_, dfutr_, dstat_, dhist_block_, dfutr_block_;
};

}  // namespace shoal::models
