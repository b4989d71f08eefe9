// NBEATSx (neuralforecast.models.NBEATSx; Olivares et al., IJF 2023): NBEATS whose blocks also
// read the exogenous inputs, with an exogenous stack that expands θ on the future exogenous.
//   block i:  θ = MLP([rᵢ | hist | futr | stat])   (backcastᵢ, fᵢ) = basis(θ)
//   rᵢ₊₁ = rᵢ − backcastᵢ,   ŷ = y_L + Σᵢ fᵢ,   r₀ = flip(y)   (ŷ, fᵢ [B, H, M])
// The MLP input is neuralforecast's concatenation: the residual (L), then hist_exog [L, X],
// futr_exog [L + H, F] flattened time-major (t·X + x, t·F + f), then stat_exog [S]. Bases:
// identity, trend (n_polynomials + 1 terms), seasonality (n_harmonics), and exogenous
// (layers/nbeats_basis.h ExogenousBasis, θ [2C]) on the C = F + S channels [futr | stat] with
// the static values repeated over the L + H steps; it needs F + S > 0. The fixed bases are sized
// for M outputs as neuralforecast sizes them (S = L + M·H, or (M + 1)·P coefficients); the
// exogenous one has one output whatever M is (θ [2C]), which neuralforecast's sum broadcasts
// over the M outputs.
// Exogenous inputs come in shoal's layout (models/forecast.h: hist [B, X, L], futr [B, F, L + H],
// stat [S] per window) and are gathered into neuralforecast's each forward; they are data, unless
// Config::exog_grads asks for their gradients (exog_grads(): through every block's MLP input
// and every exogenous basis, summed). A univariate model (N = 1), M outputs per forecast value (a
// multi-output loss's, set by the shape, not an option; ŷ element h·M + q as neuralforecast returns
// it), dropout as neuralforecast (dropout_prob_theta after each hidden activation), shared_weights
// as in NBEATS (a stack's later blocks on its first block's weights). Names:
// blocks.<i>.layers.<j>.{weight,bias} (a shared MLP under its first block only); init in torch's
// module order. Legend: B windows, L input_size, H horizon, X/F/S hist/futr/stat exogenous sizes, M
// outputs per forecast value, P basis functions.
#pragma once

#include <cstdint>

#include "shoal/models/residual_stack.h"

namespace shoal::models {

struct NBEATSxConfig : ForecastConfig<NBEATSxConfig>, StackOptions {
  static constexpr ForecastKind kKind{.name = "nbeatsx",
                                      .class_name = "NBEATSx",
                                      .hist_exog = true,
                                      .futr_exog = true,
                                      .stat_exog = true,
                                      .defaults = kStackDefaults};
  int64_t n_harmonics = 2;
  int64_t n_polynomials = 2;
  bool shared_weights = false;

  void visit(OptionVisitor& v);
  void validate_options() const;
  Index exog_width() const {  // E = L·X + (L + H)·F + S
    return input_size * hist_exog + (input_size + h) * futr_exog + stat_exog;
  }
};

template <class T>
struct NBeatsxBlock;  // MLP on [r | exog] → θ → basis (fixed, or the exogenous one)

template <class T>
class NBEATSx : public ResidualStackModel<NBEATSx<T>, T, NBEATSxConfig, NBeatsxBlock<T>>,
                public ExogGradBuffers<T> {
  using Base = ResidualStackModel<NBEATSx<T>, T, NBEATSxConfig, NBeatsxBlock<T>>;
  friend Base;
  friend struct NBeatsxBlock<T>;

 public:
  explicit NBEATSx(NBEATSxConfig cfg);

 private:
  // The stack's hooks (models/residual_stack.h): the exogenous buffers; gathering the exogenous
  // inputs into exog_ and basis_x_ (neuralforecast's layouts); the exogenous blocks' dy;
  // scattering dexog_ and dbasis_x_, the gradients of exog_ and basis_x_, into dhist_, dfutr_
  // and dstat_, the layouts the gathering read them from.
  void plan_inputs(Planner& planner, Index max_batch);
  void before_forward(const ForecastInputs<T>& in);
  ConstMat<T> before_backward(const ForecastInputs<T>& in, ConstMat<T> dout);
  void after_backward(const ForecastInputs<T>& in);
  bool has_exogenous_block() const;

  Buffer<T> exog_;       // [B, E] the MLP inputs' exogenous part
  Buffer<T> basis_x_;    // [B, (L + H)·(F + S)] the exogenous basis
  Buffer<T> dysum_;      // [B, H] dout summed over the M outputs (exogenous blocks, M > 1)
  ConstMat<T> dy_exog_;  // [B, H] what an exogenous block's one output gets: dysum_ or dout
  // exog_grads: the gradients of exog_ and basis_x_ summed over the blocks, and an exogenous
  // block's basis input gradient.
  Buffer<T> dexog_, dbasis_x_, dbasis_block_;
};

}  // namespace shoal::models
