// The training step of a windowed forecasting model, as neuralforecast runs it: plan → init →
// per step zero grads, forward, masked loss, backward, Adam.
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstring>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/kernels/reduce.h"
#include "shoal/layers/forecast_loss.h"
#include "shoal/models/forecast.h"
#include "shoal/optim/adam.h"
#include "shoal/optim/clip.h"
#include "shoal/profile/recorder.h"
#include "shoal/train/exog_embeddings.h"

namespace shoal::train {

using models::ForecastInputs;
using models::kInitStream;

// What the trainer needs of a model: a plan for a number of windows, an init, forward over
// windows to a [B·H, N·M] view (M: the loss's outputs per value, models/forecast.h) and backward
// from its gradient, its shape, its parameters (one list), its profiler zones, and whether windows
// are independent (a batch may then run in chunks).
template <class Model, class T>
concept WindowModel = requires(Model& m, const Model& cm, Planner& p, RngStream& rng,
                               const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout,
                               profile::Recorder& rec) {
  {m.plan(p, Index{})};
  {m.init(rng)};
  { m.forward(ctx, in) } -> std::convertible_to<ConstMat<T>>;
  {m.backward(ctx, in, dout)};
  { cm.horizon() } -> std::convertible_to<Index>;
  { cm.n_series() } -> std::convertible_to<Index>;
  {cm.config()};
  {m.register_zones(rec, 0)};
  { Model::kWindowsIndependent } -> std::convertible_to<bool>;
};

// The windows `m` takes in training (true) or at inference: input steps and horizon. Its
// config's in both, unless the model says otherwise (a recurrent model that forecasts step by
// step trains on other windows than it predicts from: models/recurrent_forecast.h).
template <class Model>
Index window_input_size(const Model& m, bool training) {
  if constexpr (requires { m.window_input_size(training); })
    return m.window_input_size(training);
  else
    return static_cast<void>(training), m.config().input_size;
}
template <class Model>
Index window_horizon(const Model& m, bool training) {
  if constexpr (requires { m.window_horizon(training); })
    return m.window_horizon(training);
  else
    return static_cast<void>(training), m.horizon();
}

// Owns the arena of one model replica and runs neuralforecast's training step on it:
//   zero grads → out = model.forward → L = loss(out, outsample_y, mask = outsample mask)
//   → model.backward(∂L/∂out) → Adam step.
// Model: what WindowModel names. The model must outlive the trainer and stay where it is (its
// layers are bound to the arena by address).
//
// Chunks. When no operation couples the windows of a batch (kWindowsIndependent: TSMixerx, not
// TSMixer's BatchNorm), a step runs forward, loss and backward on chunks of `chunk_windows`
// windows in turn, accumulating the parameter gradients, so the activations the model keeps
// between its forward and backward are planned for one chunk (and stay in the L2 cache) instead
// of for the whole batch. The loss is the masked mean over the whole batch: its denominator
// Σ mask is known before the forward, so every chunk's ∂L/∂ŷ is exact; a non-finite loss
// zeroes every gradient, as an unchunked step would (PointLoss, layers/losses.h).
template <class Model, class T>
requires WindowModel<Model, T>
class ForecastTrainer {
 public:
  struct Config {
    Index max_batch = 32;
    uint64_t seed = 1;                                // init and dropout masks
    Generator init_generator = Generator::kTorchCpu;  // the init's words (core/rng.h)
    optim::AdamConfig adam{};
    // Any of neuralforecast's losses (layers/forecast_loss.h); a horizon weight has H entries.
    // A multi-output loss needs a model built for its outputs (Config::outputs).
    layers::LossConfig loss{};
    // > 0: gradients clipped to this global norm before each update (Lightning's
    // gradient_clip_val, optim/clip.h); 0: off.
    double gradient_clip_val = 0;
    // Windows per chunk (models with kWindowsIndependent only); 0 = the whole batch at once.
    // 8 windows of TSMixerx's defaults keep a chunk's activations in L2 (docs/tsmixerx.md).
    Index chunk_windows = 8;
    // Categorical exogenous channels of the inputs, embedded before the model
    // (train/exog_embeddings.h); the model is built for the embedded widths, with
    // WindowShape::exog_grads. Empty: the inputs go to the model as they are.
    ExogEmbeddingsConfig categorical{};
  };

  ForecastTrainer(Model& model, Config cfg)
      : model_(model), cfg_(cfg), adam_(cfg.adam), loss_(cfg.loss), exog_(make_exog()) {
    SHOAL_CHECK(cfg_.max_batch > 0, "ForecastTrainer max_batch must be > 0, got {}",
                cfg_.max_batch);
    check_horizon_weight();
    check_outputs();
    check_categorical();
    chunk_ = cfg_.max_batch;
    if (Model::kWindowsIndependent && cfg_.chunk_windows > 0)
      chunk_ = std::min(cfg_.max_batch, cfg_.chunk_windows);
    const Index h = window_horizon(model_, true), cols = out_cols();
    Planner planner;
    exog_.plan(planner, chunk_);
    model_.plan(planner, chunk_);
    planner.buffer(dout_, Region::kActivationGrads, "trainer.dout", {chunk_ * h, cols});
    if (chunk_ < cfg_.max_batch)
      planner.buffer(pred_, Region::kActivations, "trainer.predict",
                     {cfg_.max_batch * window_horizon(model_, false), cols});
    planner.set_optim_slots(adam_.slots());
    arena_ = Arena(std::move(planner));
    RngStream rng(cfg_.seed, kInitStream, cfg_.init_generator);
    exog_.init(rng);  // neuralforecast's BaseModel draws the tables before the model's layers
    model_.init(rng);
  }
  // A replica for data-parallel steps (train/parallel_forecast_trainer.h): `model` is planned into
  // an arena whose params are `source`'s (no optimizer state, no init); its steps go through
  // accumulate() and the source's optimizer.
  ForecastTrainer(Model& model, Config cfg, const ForecastTrainer& source)
      : model_(model), cfg_(cfg), adam_(cfg.adam), loss_(cfg.loss), exog_(make_exog()) {
    SHOAL_CHECK(cfg_.max_batch > 0, "ForecastTrainer max_batch must be > 0, got {}",
                cfg_.max_batch);
    check_horizon_weight();
    check_outputs();
    check_categorical();
    chunk_ = cfg_.max_batch;
    if (Model::kWindowsIndependent && cfg_.chunk_windows > 0)
      chunk_ = std::min(cfg_.max_batch, cfg_.chunk_windows);
    Planner planner;
    exog_.plan(planner, chunk_);
    model_.plan(planner, chunk_);
    planner.buffer(dout_, Region::kActivationGrads, "trainer.dout",
                   {chunk_ * window_horizon(model_, true), out_cols()});
    planner.set_optim_slots(0);
    arena_ = Arena(std::move(planner), source.arena_);
  }
  ForecastTrainer(const ForecastTrainer&) = delete;
  ForecastTrainer& operator=(const ForecastTrainer&) = delete;

  // One optimizer step on a batch; target and mask are [B·H, N] (mask: outsample availability,
  // an empty view means all ones), loc and scale [B, N] (the window scaler's statistics: a
  // DistributionLoss's target is then the raw y; empty for the other losses). Returns the loss
  // before the update (neuralforecast's train_loss). ctx.step is the number of steps taken so
  // far, so dropout masks differ by step.
  double train_step(const ForecastInputs<T>& in, ConstMat<T> target, ConstMat<T> mask = {},
                    ConstMat<T> loc = {}, ConstMat<T> scale = {}) {
    Ctx ctx{.training = true, .seed = cfg_.seed, .step = static_cast<uint64_t>(steps_)};
    ctx.profiler = prof_;
    profile::ZoneChain zone(prof_, in.batch);
    zone.next(zones_.zero_grad);
    std::memset(arena_.region_base(Region::kGrads), 0, arena_.region_bytes(Region::kGrads));
    zone.close();
    double loss = 0;
    if (chunk_ >= in.batch) {
      const ForecastInputs<T> model_in = exog_.embed(in);
      ConstMat<T> out = model_.forward(ctx, model_in);
      zone.next(zones_.loss_forward);
      prepare_loss(in);
      loss = loss_.forward(out, target, mask, loc, scale);
      diverged_ = !loss_.numerator_finite();
      MatView<T> dout = dout_.mat().rows_block(0, out.rows);
      zone.next(zones_.loss_backward);
      loss_.backward(out, target, dout, mask, loc, scale);
      zone.close();
      backward(ctx, in, model_in, dout);
    } else {
      loss = chunked_step(ctx, in, target, mask, loc, scale);
    }
    zone.next(zones_.optimizer);
    // A diverged step leaves the weights as they were, so the caller can still see where the
    // non-finite values started (its backward through Inf activations made NaN gradients).
    if (!diverged_) {
      if (cfg_.gradient_clip_val > 0) optim::clip_grad_norm<T>(arena_, cfg_.gradient_clip_val);
      adam_.step(arena_);
    }
    ++steps_;
    return loss;
  }

  // Profiler: registers the zones of the model's layers (Model::register_zones), the loss and
  // the optimizer under trace process `model`; train_step and predict then record into `rec`
  // (null: off). Zone rows are windows (B), so costs are per window.
  void set_profiler(profile::Recorder* rec, int model = 0) {
    prof_ = rec;
    if (rec == nullptr) return;
    model_.register_zones(*rec, model);
    std::string name = rec->model_name(model);
    rec->add_memory(profile::memory_plan(arena_, name.empty() ? "forecast" : name, model));
    using profile::Category;
    const double h = static_cast<double>(window_horizon(model_, true));
    const double n = static_cast<double>(out_cols());
    Index params = 0;
    model_.for_each_param([&](const auto&, Param<T>& p) { params += p.shape.numel(); });
    const double p = static_cast<double>(params), e = sizeof(T);
    zones_.zero_grad =
        rec->zone("optimizer.zero_grad", Category::kOptimizer, {{}, {0, p * e}}, model);
    zones_.loss_forward = rec->zone(
        "loss.forward", Category::kForward,
        profile::AffineCost::of([&](double b) { return profile::point_loss_forward(b * h, n, e); }),
        model);
    zones_.loss_backward =
        rec->zone("loss.backward", Category::kBackward, profile::AffineCost::of([&](double b) {
                    return profile::point_loss_backward(b * h, n, e);
                  }),
                  model);
    zones_.optimizer = rec->zone("optimizer.step", Category::kOptimizer,
                                 {{}, profile::adam_update(p, adam_.config().amsgrad, e)}, model);
  }
  profile::Recorder* profiler() const { return prof_; }

  // Forecast in eval mode (dropout off, BatchNorm running statistics): a [B·H, N·M] view of
  // the model's output buffer, valid until the next call.
  ConstMat<T> predict(const ForecastInputs<T>& in) {
    Ctx ctx{.training = false, .seed = cfg_.seed, .step = static_cast<uint64_t>(steps_)};
    ctx.profiler = prof_;
    if (chunk_ >= in.batch) return model_.forward(ctx, exog_.embed(in));
    SHOAL_CHECK(in.batch <= cfg_.max_batch, "predict: batch {} over the planned {}", in.batch,
                cfg_.max_batch);
    const Index h = window_horizon(model_, false), n = out_cols();
    MatView<T> all = pred_.mat().rows_block(0, in.batch * h);
    for (Index b0 = 0; b0 < in.batch; b0 += chunk_) {
      const Index bc = std::min(chunk_, in.batch - b0);
      ConstMat<T> out = model_.forward(ctx, exog_.embed(slice(in, b0, bc, /*training=*/false)));
      for (Index r = 0; r < bc * h; ++r) std::copy_n(out.row(r), n, all.row(b0 * h + r));
    }
    return all;
  }

  Arena& arena() { return arena_; }
  layers::ForecastLoss<T>& loss() { return loss_; }
  // Gives the loss what it needs of the whole batch's inputs before its chunks run (MASE's
  // insample scale; nothing for the other losses).
  void prepare_loss(const ForecastInputs<T>& in) {
    if (loss_.config().kind == layers::LossKind::kMase)
      loss_.set_insample(in.insample_y, in.batch, window_input_size(model_, true),
                         model_.n_series());
  }
  // Columns of the model's output: N series × M outputs per value.
  Index out_cols() const { return model_.n_series() * loss_.outputs(); }
  // Whether the last train_step's predictions gave a non-finite loss sum. train_step then returns
  // 0 (neuralforecast's _divide_no_nan) and skips the update; the fit loop stops on this.
  bool last_step_diverged() const { return diverged_; }
  optim::Adam<T>& optimizer() { return adam_; }
  double gradient_clip_val() const { return cfg_.gradient_clip_val; }
  int64_t steps() const { return steps_; }
  // Windows per forward/backward pass (the model is planned for this many).
  Index chunk_windows() const { return chunk_; }

 public:
  // Windows [b0, b0 + count) of a batch (models whose windows are independent), a training
  // batch's or an inference one's.
  ForecastInputs<T> slice(const ForecastInputs<T>& in, Index b0, Index count,
                          bool training = true) const {
    if constexpr (Model::kWindowsIndependent) {
      const auto& c = model_.config();
      // Each window's exogenous rows move with it.
      Index x = c.hist_exog, f = c.futr_exog;
      if (exog_.active()) {  // the trainer's inputs are the raw streams, before embedding
        x = exog_.raw_hist();
        f = exog_.raw_futr();
      }
      return in.windows(b0, count, window_input_size(model_, training),
                        window_horizon(model_, training), c.n_series, x, f);
    } else {
      static_cast<void>(training);
      SHOAL_CHECK(false, "this model couples the windows of a batch; it cannot be chunked");
      return in;
    }
  }

 private:
  // The masked mean loss over the whole batch, chunk by chunk (see the class comment). The
  // elementwise terms are PointLoss's (layers/losses.h), with Σ W taken over every chunk first.
  double chunked_step(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> target,
                      ConstMat<T> mask, ConstMat<T> loc, ConstMat<T> scale) {
    const double den = loss_.denominator(mask, target.rows, target.cols);
    const T s = static_cast<T>(1.0 / den);
    prepare_loss(in);
    const double num = accumulate(ctx, in, target, mask, loc, scale, s);
    diverged_ = !std::isfinite(num);
    const double ratio = num / den;
    if (std::isfinite(ratio)) {
      // The chunks' gradients are those of the mean; RMSE's √ scales them all alike.
      const double g = loss_.finish_grad(ratio);
      if (g != 1.0) {
        T* grads = arena_.grads<T>();
        const Index count = static_cast<Index>(arena_.region_bytes(Region::kGrads) / sizeof(T));
        for (Index i = 0; i < count; ++i) grads[i] *= static_cast<T>(g);
      }
      return loss_.finish(ratio);
    }
    std::memset(arena_.region_base(Region::kGrads), 0, arena_.region_bytes(Region::kGrads));
    return 0;
  }

 public:
  // Forward, loss and backward of the windows `in` (a batch, or one thread's share of it),
  // chunk by chunk, adding their parameter gradients to the arena's (which it does not clear):
  // the loss terms are weighted by `s` (1 / Σ W of the whole batch); loc and scale [B, N] as
  // train_step's. Returns their Σ ℓ·W.
  double accumulate(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> target,
                    ConstMat<T> mask, ConstMat<T> loc, ConstMat<T> scale, T s) {
    const Index h = window_horizon(model_, true);
    double num = 0;
    for (Index b0 = 0; b0 < in.batch; b0 += chunk_) {
      const Index bc = std::min(chunk_, in.batch - b0);
      const ForecastInputs<T> sub = bc == in.batch ? in : slice(in, b0, bc);
      const ForecastInputs<T> model_in = exog_.embed(sub);
      ConstMat<T> out = model_.forward(ctx, model_in);
      ConstMat<T> tgt = target.rows_block(b0 * h, bc * h);
      ConstMat<T> msk = mask.data == nullptr ? ConstMat<T>{} : mask.rows_block(b0 * h, bc * h);
      ConstMat<T> lc = loc.data == nullptr ? ConstMat<T>{} : loc.rows_block(b0, bc);
      ConstMat<T> sc = scale.data == nullptr ? ConstMat<T>{} : scale.rows_block(b0, bc);
      MatView<T> dout = dout_.mat().rows_block(0, bc * h);
      {
        // The chunk's loss and its gradient are one pass; the profile shows both as the
        // forward zone (the loss is a tiny share of a step).
        profile::ZoneChain zone(prof_, bc);
        zone.next(zones_.loss_forward);
        num += loss_.chunk(out, tgt, msk, lc, sc, dout, s);
      }
      backward(ctx, sub, model_in, dout);
    }
    return num;
  }

 private:
  // The model's output layer must be sized for the loss's outputs per value.
  void check_outputs() const {
    Index m = 1;
    if constexpr (requires { model_.config().outputs; }) m = model_.config().outputs;
    SHOAL_CHECK(m == loss_.outputs(),
                "the model emits {} output(s) per forecast value but its loss needs {} (a "
                "multi-output loss needs a model built for it: WindowShape::outputs)",
                m, loss_.outputs());
  }
  // The model's backward on `model_in` (exog_.embed(raw)), then the embedding tables' from the
  // model's exogenous input gradients.
  void backward(const Ctx& ctx, const ForecastInputs<T>& raw, const ForecastInputs<T>& model_in,
                ConstMat<T> dout) {
    model_.backward(ctx, model_in, dout);
    if constexpr (requires { model_.exog_grads(); })
      if (exog_.active()) exog_.backward(raw, model_.exog_grads());
  }
  ExogEmbeddings<T> make_exog() const {
    return ExogEmbeddings<T>(cfg_.categorical, model_.config().input_size, model_.horizon(),
                             model_.n_series());
  }
  // Categorical features need a model that returns its exogenous input gradients, built for the
  // embedded widths.
  void check_categorical() const {
    if (!exog_.active()) return;
    if constexpr (requires { model_.exog_grads(); }) {
      SHOAL_CHECK(model_.config().exog_grads,
                  "categorical exogenous features need a model built with WindowShape::exog_grads");
    } else {
      SHOAL_CHECK(false, "this model does not take categorical exogenous features");
    }
  }
  void check_horizon_weight() const {
    const size_t hw = cfg_.loss.horizon_weight.size();
    SHOAL_CHECK(hw == 0 || Index(hw) == window_horizon(model_, true),
                "horizon_weight has {} entries; it needs one per horizon step of the training "
                "windows ({})",
                hw, window_horizon(model_, true));
  }

  Model& model_;
  Config cfg_;
  optim::Adam<T> adam_;
  layers::ForecastLoss<T> loss_;
  ExogEmbeddings<T> exog_;
  Buffer<T> dout_;
  Buffer<T> pred_;  // [max_batch·H, N] chunked predict output
  Arena arena_;
  Index chunk_ = 0;
  int64_t steps_ = 0;
  bool diverged_ = false;
  profile::Recorder* prof_ = nullptr;
  struct Zones {
    profile::ZoneId zero_grad, loss_forward, loss_backward, optimizer;
  } zones_{};
};

}  // namespace shoal::train
