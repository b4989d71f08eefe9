// NBEATS (neuralforecast.models.NBEATS; Oreshkin et al., ICLR 2020): a stack of MLP blocks with
// doubly residual links, each expanding its θ on a basis.
//   r₀ = flip(y) (the window, newest first)    ŷ = y_L (the last value, in every output) + Σᵢ fᵢ,
//   and block i:
//     θ = MLP(rᵢ) [B, S]    (backcastᵢ, fᵢ [B, H, M]) = basis(θ)    rᵢ₊₁ = rᵢ − backcastᵢ
//   with the MLP of models/theta_mlp.h (L in, S out) and the identity, trend (n_basis + 1
//   terms of `basis`: polynomial, legendre, changepoint, piecewise_linear, linear_hat or
//   chebyshev; not spline) or seasonality (n_harmonics) basis of layers/nbeats_basis.h, each
//   sized for M outputs as neuralforecast sizes it (S = L + M·H, or (M + 1)·P coefficients).
// A univariate model (N = 1); M outputs per forecast value (a multi-output loss's, set by the
// shape, not an option), ŷ [B, H, M] element h·M + q, as neuralforecast returns it; the residuals
// are masked by the window's insample mask (models/residual_stack.h). neuralforecast's NBEATS has
// no dropout (it raises for dropout_prob_theta > 0). With shared_weights a stack's later blocks run
// on its first block's MLP weights (torch reuses the module), with activations of their own.
// Parameter names are neuralforecast's named_parameters, blocks.<i>.layers.<j>.{weight,bias} (a
// shared MLP under its first block only); its fixed bases (blocks.<i>.basis.*_basis) are state
// here, not parameters. Init: torch's module order, so a Generator::kTorchCpu stream seeded with
// random_seed reproduces neuralforecast's weights. Legend: B windows, L input_size, H horizon,
// M outputs per forecast value, P basis functions.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shoal/core/options.h"
#include "shoal/layers/nbeats_basis.h"
#include "shoal/models/forecast.h"
#include "shoal/models/theta_mlp.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

template <class T>
class NBEATS {
 public:
  struct Config {
    Index h = 0;
    Index input_size = 0;
    Index n_series = 1;
    int64_t n_harmonics = 2;
    int64_t n_basis = 2;
    std::string basis = "polynomial";
    std::vector<std::string> stack_types = {"identity", "trend", "seasonality"};
    std::vector<int64_t> n_blocks = {1, 1, 1};
    // neuralforecast's list of [in, out] pairs, flattened: 3 * [[512, 512]].
    std::vector<int64_t> mlp_units = {512, 512, 512, 512, 512, 512};
    double dropout_prob_theta = 0.0;
    std::string activation = "ReLU";
    bool shared_weights = false;
    Index outputs = 1;  // M, from the loss (not an option)

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

  explicit NBEATS(Config cfg);
  ~NBEATS();
  NBEATS(const NBEATS&) = delete;
  NBEATS& operator=(const NBEATS&) = delete;

  const Config& config() const { return cfg_; }
  Index horizon() const { return cfg_.h; }
  Index n_series() const { return cfg_.n_series; }

  void plan(Planner& planner, Index max_batch);
  void init(RngStream& rng);
  // Returns the forecasts [B·H, M] (a view of the model's output buffer); dout likewise.
  MatView<T> forward(const Ctx& ctx, const ForecastInputs<T>& in);
  void backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout);
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

  Config cfg_;
  std::vector<std::unique_ptr<Block>> blocks_;
  std::vector<size_t> owner_;  // the block whose weights block i runs on (itself unless shared)
  std::vector<profile::LayerZones> zones_;  // one per block
  Buffer<T> out_;                           // [B, H·M]
  Buffer<T> dr_;                            // [B, L] gradient of the residual between blocks
  Buffer<T> drb_;                           // [B, L] a block's own share of it
};

}  // namespace shoal::models
