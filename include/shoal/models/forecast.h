// What a multivariate forecasting model (TSMixer, TSMixerx) consumes and produces, and a
// minimal training step around one (plan → init → per step forward, loss, backward, Adam).
//
// Layouts (neuralforecast's windows_batch, all contiguous row-major, already scaled):
//   insample_y [B, L, N]        hist_exog [B, X, L, N]        futr_exog [B, F, L + H, N]
//   stat_exog  [N, S]           output    [B, H, N]  (point losses, Q = 1)
// Legend: B windows, L input_size, H horizon, N series, X/F/S exogenous counts.
#pragma once

#include <cstdint>
#include <cstring>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/layers/losses.h"
#include "shoal/optim/adam.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

template <class T>
struct ForecastInputs {
  Index batch = 0;                // B ≤ the planned max batch
  const T* insample_y = nullptr;  // [B, L, N]
  const T* hist_exog = nullptr;   // [B, X, L, N], null when X = 0
  const T* futr_exog = nullptr;   // [B, F, L + H, N], null when F = 0
  const T* stat_exog = nullptr;   // [N, S], null when S = 0
};

// The Philox stream that initialisation draws from (dropout layers use small stream ids).
inline constexpr uint64_t kInitStream = 0x7153'0000;

// Owns the arena of one model replica and runs neuralforecast's training step on it:
//   zero grads → out = model.forward → L = loss(out, outsample_y, mask = outsample mask)
//   → model.backward(∂L/∂out) → Adam step.
// Model needs: plan(Planner&, max_batch), init(RngStream&), forward(ctx, inputs) → [B·H, N]
// view, backward(ctx, inputs, dout), horizon(), n_series(). The model must outlive the trainer
// and stay where it is (its layers are bound to the arena by address).
template <class Model, class T>
class ForecastTrainer {
 public:
  struct Config {
    Index max_batch = 32;
    uint64_t seed = 1;  // init and dropout masks
    optim::AdamConfig adam{};
    layers::PointLossKind loss = layers::PointLossKind::kMae;
    double huber_delta = 1.0;
  };

  ForecastTrainer(Model& model, Config cfg)
      : model_(model),
        cfg_(cfg),
        adam_(cfg.adam),
        loss_({.kind = cfg.loss, .delta = cfg.huber_delta}) {
    Planner planner;
    model_.plan(planner, cfg_.max_batch);
    planner.buffer(dout_, Region::kActivationGrads, "trainer.dout",
                   {cfg_.max_batch * model_.horizon(), model_.n_series()});
    planner.set_optim_slots(adam_.slots());
    arena_ = Arena(std::move(planner));
    RngStream rng(cfg_.seed, kInitStream);
    model_.init(rng);
  }
  ForecastTrainer(const ForecastTrainer&) = delete;
  ForecastTrainer& operator=(const ForecastTrainer&) = delete;

  // One optimizer step on a batch; target and mask are [B·H, N] (mask: outsample availability,
  // an empty view means all ones). Returns the loss before the update (neuralforecast's
  // train_loss). ctx.step is the number of steps taken so far, so dropout masks differ by step.
  double train_step(const ForecastInputs<T>& in, ConstMat<T> target, ConstMat<T> mask = {}) {
    Ctx ctx{.training = true, .seed = cfg_.seed, .step = static_cast<uint64_t>(steps_)};
    ctx.profiler = prof_;                      // profiler
    profile::ZoneChain zone(prof_, in.batch);  // profiler
    zone.next(zones_.zero_grad);               // profiler
    std::memset(arena_.region_base(Region::kGrads), 0, arena_.region_bytes(Region::kGrads));
    zone.close();  // profiler
    ConstMat<T> out = model_.forward(ctx, in);
    const layers::LossWeights<T> w{.mask = mask};
    zone.next(zones_.loss_forward);  // profiler
    const double loss = loss_.forward(out, target, w);
    MatView<T> dout = dout_.mat().rows_block(0, out.rows);
    zone.next(zones_.loss_backward);  // profiler
    loss_.backward(out, target, dout, w);
    zone.close();  // profiler
    model_.backward(ctx, in, dout);
    zone.next(zones_.optimizer);  // profiler
    adam_.step(arena_);
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
    using profile::Category;
    const double h = static_cast<double>(model_.horizon());
    const double n = static_cast<double>(model_.n_series());
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

  // Forecast in eval mode (dropout off, BatchNorm running statistics): a [B·H, N] view of the
  // model's output buffer, valid until the next call.
  ConstMat<T> predict(const ForecastInputs<T>& in) {
    Ctx ctx{.training = false, .seed = cfg_.seed, .step = static_cast<uint64_t>(steps_)};
    ctx.profiler = prof_;  // profiler
    return model_.forward(ctx, in);
  }

  Arena& arena() { return arena_; }
  optim::Adam<T>& optimizer() { return adam_; }
  int64_t steps() const { return steps_; }

 private:
  Model& model_;
  Config cfg_;
  optim::Adam<T> adam_;
  layers::PointLoss<T> loss_;
  Buffer<T> dout_;
  Arena arena_;
  int64_t steps_ = 0;
  profile::Recorder* prof_ = nullptr;  // profiler
  struct Zones {
    profile::ZoneId zero_grad, loss_forward, loss_backward, optimizer;
  } zones_{};
};

}  // namespace shoal::models
