// SGD with momentum, dampening, Nesterov and L2 weight decay: torch.optim.SGD, single-tensor
// path, on the dense prefix of an Arena (see docs/optim.md).
//   g' = g + wd·p
//   step 1:  buf = g'                         (PyTorch clones the first gradient)
//   step t:  buf = momentum·buf + (1 − dampening)·g'
//   d = nesterov ? g' + momentum·buf : buf     (d = g' when momentum = 0)
//   p = p − lr·d
// State: slot 0 = momentum buffer (only when momentum ≠ 0).
#pragma once

#include <cstdint>

#include "shoal/core/arena.h"

namespace shoal::optim {

template <class T>
class Sgd {
 public:
  struct Config {
    double lr = 1e-3;
    double momentum = 0.0;
    double dampening = 0.0;
    double weight_decay = 0.0;
    bool nesterov = false;
  };

  explicit Sgd(Config c);

  // Optimizer-state slots to plan (Planner::set_optim_slots) before building the arena.
  int slots() const { return cfg_.momentum != 0.0 ? 1 : 0; }
  const Config& config() const { return cfg_; }
  double lr() const { return cfg_.lr; }
  void set_lr(double lr);
  // Optimizer steps begun so far (PyTorch's state['step'] analogue).
  int64_t step_count() const { return step_; }

  // One whole step: begin_step() then update() over the full dense prefix.
  void step(const Arena& arena);
  // Multi-threaded use: one thread calls begin_step(), then every thread calls update() on its
  // own disjoint range (see split_dense), then they join. Elements [begin, end) of the prefix.
  void begin_step();
  void update(const Arena& arena, Index begin, Index end) const;

 private:
  Config cfg_;
  int64_t step_ = 0;
};

extern template class Sgd<float>;
extern template class Sgd<double>;

}  // namespace shoal::optim
