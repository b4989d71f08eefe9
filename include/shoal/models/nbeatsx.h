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
class NBEATSx {
 public:
  struct Config {
    Index h = 0;
    Index input_size = 0;
    Index n_series = 1;
    Index hist_exog = 0;  // X, from the data
    Index futr_exog = 0;  // F
    Index stat_exog = 0;  // S
    Index outputs = 1;    // M, from the loss (not an option)
    int64_t n_harmonics = 2;
    int64_t n_polynomials = 2;
    std::vector<std::string> stack_types = {"identity", "trend", "seasonality"};
    std::vector<int64_t> n_blocks = {1, 1, 1};
    // neuralforecast's list of [in, out] pairs, flattened: 3 * [[512, 512]].
    std::vector<int64_t> mlp_units = {512, 512, 512, 512, 512, 512};
    double dropout_prob_theta = 0.0;
    std::string activation = "ReLU";
    bool shared_weights = false;
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

  explicit NBEATSx(Config cfg);
  ~NBEATSx();
  NBEATSx(const NBEATSx&) = delete;
  NBEATSx& operator=(const NBEATSx&) = delete;

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
  Index exog_width() const;  // E = L·X + (L + H)·F + S
  // Scatters dexog_ and dbasis_x_, the gradients of exog_ and basis_x_, into dhist_, dfutr_
  // and dstat_, the layouts forward gathered them from.
  void scatter_exog_grads(const ForecastInputs<T>& in);
  bool has_exogenous_block() const {
    for (const std::string& t : cfg_.stack_types)
      if (t == "exogenous") return true;
    return false;
  }

  Config cfg_;
  std::vector<std::unique_ptr<Block>> blocks_;
  std::vector<size_t> owner_;  // the block whose weights block i runs on (itself unless shared)
  std::vector<profile::LayerZones> zones_;  // one per block
  Buffer<T> exog_;                          // [B, E] the MLP inputs' exogenous part
  Buffer<T> basis_x_;                       // [B, (L + H)·(F + S)] the exogenous basis
  Buffer<T> out_;                           // [B, H·M]
  Buffer<T> dysum_;  // [B, H] dout summed over the M outputs (exogenous blocks, M > 1)
  Buffer<T> dr_;     // [B, L] gradient of the residual between blocks
  Buffer<T> drb_;    // [B, L] a block's own share of it
  // exog_grads: the gradients of exog_ and basis_x_ summed over the blocks, an exogenous
  // block's basis input gradient, and the inputs' [B·X, L], [B·F, L + H], [B, S] (a row per
  // window, or their [1, S] sum).
  Buffer<T> dexog_, dbasis_x_, dbasis_block_, dhist_, dfutr_, dstat_;
};

}  // namespace shoal::models
