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
#include <string>
#include <vector>

#include "shoal/core/options.h"
#include "shoal/models/residual_stack.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

struct NBEATSConfig : ForecastConfig<NBEATSConfig> {
  static constexpr ForecastKind kKind{.name = "nbeats"};
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

  void visit(OptionVisitor& v);
  void validate_options() const;
};

template <class T>
struct NBeatsBlock;  // MLP → θ → basis → (backcast, forecast)

template <class T>
class NBEATS : public ResidualStackModel<T, NBEATSConfig, NBeatsBlock<T>> {
  using Base = ResidualStackModel<T, NBEATSConfig, NBeatsBlock<T>>;
  using Base::batch_rows;
  using Base::cfg_;

 public:
  using Config = NBEATSConfig;

  explicit NBEATS(Config cfg);
  ~NBEATS();

  void plan(Planner& planner, Index max_batch);
  void init(RngStream& rng);
  // Returns the forecasts [B·H, M] (a view of the model's output buffer); dout likewise.
  MatView<T> forward(const Ctx& ctx, const ForecastInputs<T>& in);
  void backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout);
  // Profiler zones "blocks.<i>" (rows = windows), recorded when ctx.profiler is set.
  void register_zones(profile::Recorder& rec, int model = 0);
};

}  // namespace shoal::models
