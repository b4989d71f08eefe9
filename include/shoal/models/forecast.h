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
    std::memset(arena_.region_base(Region::kGrads), 0, arena_.region_bytes(Region::kGrads));
    ConstMat<T> out = model_.forward(ctx, in);
    const layers::LossWeights<T> w{.mask = mask};
    const double loss = loss_.forward(out, target, w);
    MatView<T> dout = dout_.mat().rows_block(0, out.rows);
    loss_.backward(out, target, dout, w);
    model_.backward(ctx, in, dout);
    adam_.step(arena_);
    ++steps_;
    return loss;
  }

  // Forecast in eval mode (dropout off, BatchNorm running statistics): a [B·H, N] view of the
  // model's output buffer, valid until the next call.
  ConstMat<T> predict(const ForecastInputs<T>& in) {
    Ctx ctx{.training = false, .seed = cfg_.seed, .step = static_cast<uint64_t>(steps_)};
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
};

}  // namespace shoal::models
