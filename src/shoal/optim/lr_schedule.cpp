#include "shoal/optim/lr_schedule.h"

#include <algorithm>

namespace shoal::optim {

StepLR::StepLR(double base_lr, Config c) : cfg_(c), base_lr_(base_lr), lr_(base_lr) {
  SHOAL_CHECK(c.step_size >= 1, "StepLR: step_size must be >= 1, got {}", c.step_size);
  SHOAL_CHECK(base_lr >= 0.0, "StepLR: base lr must be >= 0, got {}", base_lr);
}

StepLR StepLR::neuralforecast(double base_lr, Index max_steps, Index num_lr_decays) {
  return StepLR(base_lr, {.step_size = lr_decay_steps(max_steps, num_lr_decays), .gamma = 0.5});
}

double StepLR::step() {
  // PyTorch's chainable StepLR.get_lr: multiply by gamma when last_epoch hits a multiple.
  ++last_step_;
  if (last_step_ % cfg_.step_size == 0) lr_ *= cfg_.gamma;
  return lr_;
}

Index lr_decay_steps(Index max_steps, Index num_lr_decays) {
  if (num_lr_decays <= 0) return 100'000'000;  // neuralforecast's 10e7
  return std::max<Index>(max_steps / num_lr_decays, 1);
}

}  // namespace shoal::optim
