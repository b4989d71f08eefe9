// Learning-rate schedules, stepped by the trainer after every optimizer step (Lightning
// interval "step", as neuralforecast configures it).
//
// StepLR (torch.optim.lr_scheduler.StepLR): after scheduler step k (k = 1, 2, ...),
//   lr = base_lr · gamma^floor(k / step_size),
// computed as PyTorch's chainable form does (lr *= gamma whenever k is a multiple of
// step_size), so the doubles equal PyTorch's.
#pragma once

#include <cstdint>

#include "shoal/core/tensor.h"

namespace shoal::optim {

class StepLR {
 public:
  struct Config {
    Index step_size = 1;
    double gamma = 0.1;
  };

  StepLR(double base_lr, Config c);
  // neuralforecast's default schedule: StepLR(lr_decay_steps(max_steps, num_lr_decays), 0.5).
  static StepLR neuralforecast(double base_lr, Index max_steps, Index num_lr_decays);

  const Config& config() const { return cfg_; }
  double base_lr() const { return base_lr_; }
  // The lr for the next optimizer step.
  double lr() const { return lr_; }
  // Scheduler steps taken (PyTorch's last_epoch).
  Index last_step() const { return last_step_; }
  // Call after each optimizer step; returns the new lr (hand it to the optimizer's set_lr).
  double step();

 private:
  Config cfg_;
  double base_lr_;
  double lr_;
  Index last_step_ = 0;
};

// neuralforecast: max(max_steps // num_lr_decays, 1) if num_lr_decays > 0, else 10e7 (no decay
// within any realistic run).
Index lr_decay_steps(Index max_steps, Index num_lr_decays);

}  // namespace shoal::optim
