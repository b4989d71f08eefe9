// What every windowed forecasting model has in common, stated once: its kind (neuralforecast's
// class attributes), the Config fields the data and the loss set (the shape), the checks of that
// shape against the kind, and the accessors the trainer's concept names
// (train/forecast_trainer.h, WindowModel). A model's own header then states only what is its
// own: its options, its blocks, forward and backward.
//
//   struct NLinearConfig : ForecastConfig<NLinearConfig> {
//     static constexpr ForecastKind kKind{.name = "nlinear", .class_name = "NLinear"};
//   };
//   template <class T> class NLinear : public ForecastModel<NLinearConfig> { ... };
//
// The base is a plain class template (no virtual functions): the trainer calls the model's own
// forward and backward directly.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "shoal/core/error.h"
#include "shoal/models/forecast.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

// A model's defaults for the options every forecaster shares, where neuralforecast's class
// sets its own (its __init__ defaults); unset: the job's. The registry applies them to a job.
struct JobDefaults {
  std::optional<Index> max_steps;
  std::optional<double> learning_rate;
  std::optional<Index> num_lr_decays;
  std::optional<Index> input_size;                    // -1: 3 × h
  std::optional<Index> windows_batch_size;            // training windows per step
  std::optional<Index> inference_windows_batch_size;  // -1: every window of a series
  bool robust_scaler = false;                         // scaler_type "robust"
};

// NLinear's and DLinear's: 5,000 steps at 1e-4, 1,024 windows a step and a pass.
inline constexpr JobDefaults kLinearDefaults{.max_steps = 5000,
                                             .learning_rate = 1e-4,
                                             .windows_batch_size = 1024,
                                             .inference_windows_batch_size = 1024};

// The recurrent and convolutional models' (RNN, GRU, LSTM, TCN, DilatedRNN): input_size -1
// (3 × h), 128 training windows, 1,024 per inference pass, the robust scaler.
inline constexpr JobDefaults kRecurrentDefaults{.input_size = -1,
                                                .windows_batch_size = 128,
                                                .inference_windows_batch_size = 1024,
                                                .robust_scaler = true};

// What a model takes, as neuralforecast's class attributes say (MULTIVARIATE, EXOGENOUS_HIST,
// EXOGENOUS_FUTR, EXOGENOUS_STAT). The registry takes `multivariate` from here
// (train/global_fit.h, windowed_model), and set_shape rejects what the model cannot take.
struct ForecastKind {
  std::string_view name;        // the registry's name (for messages too)
  std::string_view class_name;  // neuralforecast's class: the forecast column's name
  bool multivariate = false;    // mixes the N series of a panel; false: one series per window
  bool hist_exog = false;
  bool futr_exog = false;
  bool stat_exog = false;
  JobDefaults defaults;
};

// The shape of a model's Config (WindowShape: the fields that come from the data and the job,
// not from the user's options): takes `s`, rejecting what `kind` cannot take (exogenous inputs it
// has no use for, more than one series per window for a univariate model).
void take_shape(WindowShape& shape, const ForecastKind& kind, const WindowShape& s);
// The shape a model is built with: positive sizes, and nothing `kind` cannot take.
void check_shape(const WindowShape& shape, const ForecastKind& kind);

// At least one output per forecast value (a loss's outputs, set by set_shape).
void check_outputs(const WindowShape& shape, const ForecastKind& kind);

// A model's Config derives from this (Derived: the Config itself, which names the model's kind
// as `static constexpr ForecastKind kKind`): the shape fields, then the model's own options
// (`visit`, `validate_options`). A Config without options of its own keeps the empty ones.
template <class Derived>
struct ForecastConfig : WindowShape {
  void set_shape(const WindowShape& s) { take_shape(*this, Derived::kKind, s); }
  // The options `c` shaped by `s` (designated initializers cannot name a base's fields).
  static Derived shaped(const WindowShape& s, Derived c = {}) {
    c.set_shape(s);
    return c;
  }
  void visit(OptionVisitor&) {}
  // Rejects bad options (the model's own validate_options) and a shape without outputs.
  void validate() const {
    check_outputs(*this, Derived::kKind);
    static_cast<const Derived&>(*this).validate_options();
  }
  void validate_options() const {}
};

// The base of a windowed model (of any element type: a model over T derives from
// ForecastModel<Config>, so its members need no this->): its Config (the shape checked and the
// options validated when the model is built), the accessors the trainer reads, no copies (its
// layers are bound to an arena by address). By default the windows of a batch are independent and
// run whole (kChunkWindows 0: for most models the weights, not the windows, are the traffic); a
// model says otherwise by declaring its own.
template <class C>
class ForecastModel {
 public:
  using Config = C;
  static constexpr bool kWindowsIndependent = true;
  static constexpr Index kChunkWindows = 0;

  ForecastModel(const ForecastModel&) = delete;
  ForecastModel& operator=(const ForecastModel&) = delete;

  const Config& config() const { return cfg_; }
  Index horizon() const { return cfg_.h; }
  Index n_series() const { return cfg_.n_series; }

 protected:
  explicit ForecastModel(Config cfg) : cfg_(std::move(cfg)) {
    check_shape(cfg_, Config::kKind);
    cfg_.validate();
  }
  ~ForecastModel() = default;

  // The first `b` rows of a model buffer (a batch's windows).
  template <class T>
  static MatView<T> batch_rows(const Buffer<T>& buf, Index b) {
    return buf.mat().rows_block(0, b);
  }
  // The largest batch the model is planned for; forward checks its batches against it.
  void set_max_batch(Index max_batch) {
    SHOAL_CHECK(max_batch > 0, "{}: max_batch must be > 0, got {}", Config::kKind.name, max_batch);
    max_batch_ = max_batch;
  }
  // A batch within the planned one, with the inputs the shape names.
  template <class T>
  void check_inputs(const ForecastInputs<T>& in) const {
    SHOAL_CHECK(in.batch > 0 && in.batch <= max_batch_, "{}: batch {} outside [1, {}]",
                Config::kKind.name, in.batch, max_batch_);
    SHOAL_CHECK(in.insample_y != nullptr && (cfg_.hist_exog == 0 || in.hist_exog != nullptr) &&
                    (cfg_.futr_exog == 0 || in.futr_exog != nullptr) &&
                    (cfg_.stat_exog == 0 || in.stat_exog != nullptr),
                "{}: inputs missing for its config ({} hist, {} futr, {} static exogenous)",
                Config::kKind.name, cfg_.hist_exog, cfg_.futr_exog, cfg_.stat_exog);
  }

  Config cfg_;
  Index max_batch_ = 0;
};

// The members the trainer calls (train/forecast_trainer.h, WindowModel), declared once for
// every windowed model over element type T; a model's class opens its public part with
//   SHOAL_WINDOW_MODEL_MEMBERS;
// and its source defines them:
//   plan(planner, max_batch)   its buffers for batches of up to max_batch windows
//   forward(ctx, in)           the forecasts [B·H, N·M] (N 1 for a univariate model; a view of a
//                              model buffer, valid until the next forward)
//   backward(ctx, in, dout)    dout: ∂loss/∂forecasts of the last forward, same shape; the
//                              parameters' gradients accumulate
//   register_zones(rec, model) its profiler zones (rows = windows), recorded when ctx.profiler
//                              is set; the model's source lists them
// A macro, because C++ has no other way to declare a member once for classes that each define it.
#define SHOAL_WINDOW_MODEL_MEMBERS                                              \
  void plan(Planner& planner, Index max_batch);                                 \
  MatView<T> forward(const Ctx& ctx, const ForecastInputs<T>& in);              \
  void backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout); \
  void register_zones(profile::Recorder& rec, int model = 0)

// What a model that names its layers gets from that list: its parameters, their count and
// PyTorch's default init, each walked in the list's order. Model (the model itself) declares
//   template <class F> void for_each_layer(F&& f);
// calling f(prefix, layer) for each of its layers in torch's module order, prefix the layer's
// state_dict name ("linear.", "mixing_layers.0.temporal_mixer."). That one order is the
// parameters' order and the init's, so neuralforecast's seed draws the same weights; a model whose
// init draws otherwise (or skips a layer) declares its own init.
template <class Model>
class NamedLayers {
 public:
  // f(name, param) for every parameter, named as neuralforecast's state_dict keys.
  template <class F>
  void for_each_param(F&& f) {
    self().for_each_layer([&](const std::string& prefix, auto& layer) {
      layer.for_each_param([&](const auto& name, auto& p) { f(prefix + std::string(name), p); });
    });
  }
  void init(RngStream& rng) {
    self().for_each_layer([&](const std::string&, auto& layer) { layer.init(rng); });
  }
  // Σ numel of the trainable parameters (neuralforecast's count).
  Index num_params() {
    Index total = 0;
    for_each_param([&](const std::string&, auto& p) { total += p.shape.numel(); });
    return total;
  }

 private:
  Model& self() { return static_cast<Model&>(*this); }
};

// The gradients of a model's exogenous inputs (models/forecast.h, ExogGrads), for a model that
// returns them: it plans the buffers it uses (with Config::exog_grads) and writes them in its
// backward. A model without exogenous gradients does not derive from this, and the registry
// refuses categorical features for it.
template <class T>
class ExogGradBuffers {
 public:
  ExogGrads<T> exog_grads() const { return {dhist_.view.data, dfutr_.view.data, dstat_.view.data}; }

 protected:
  Buffer<T> dhist_, dfutr_, dstat_;
};

}  // namespace shoal::models
