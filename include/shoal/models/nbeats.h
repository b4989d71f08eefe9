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

#include "shoal/models/residual_stack.h"

namespace shoal::models {

struct NBEATSConfig : ForecastConfig<NBEATSConfig>, StackOptions {
  static constexpr ForecastKind kKind{
      .name = "nbeats", .class_name = "NBEATS", .defaults = kStackDefaults};
  int64_t n_harmonics = 2;
  int64_t n_basis = 2;
  std::string basis = "polynomial";
  bool shared_weights = false;

  void visit(OptionVisitor& v);
  void validate_options() const;
};

template <class T>
struct NBeatsBlock;  // MLP → θ → basis → (backcast, forecast)

template <class T>
class NBEATS : public ResidualStackModel<NBEATS<T>, T, NBEATSConfig, NBeatsBlock<T>> {
 public:
  explicit NBEATS(NBEATSConfig cfg);
};

}  // namespace shoal::models
