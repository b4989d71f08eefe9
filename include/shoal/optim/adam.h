// Adam and AdamW on the dense prefix of an Arena, with torch.optim.Adam / AdamW's
// single-tensor (CPU default) arithmetic in PyTorch's order (see docs/optim.md):
//   AdamW:  p = p·(1 − lr·wd)                       (decoupled decay, before the update)
//   Adam:   g = g + wd·p                            (L2, only when wd ≠ 0)
//   m = lerp(m, g, 1 − β1) = m + (1 − β1)·(g − m)
//   v = β2·v + (1 − β2)·g·g
//   amsgrad: v̂ = max(v̂, v), used instead of v below
//   p = p + (−lr / (1 − β1^t))·m / (√v / √(1 − β2^t) + eps)     (eps after bias correction)
// Per-step scalars (bias corrections, step size) are computed in double as Python does, then
// rounded to T; the division by √(1 − β2^t) is a multiply by its reciprocal
// (kernels/optim_update.h). State slots: 0 = m, 1 = v, 2 = v̂ (amsgrad only). Padding stays zero.
#pragma once

#include <cstdint>

#include "shoal/core/arena.h"

namespace shoal::optim {

struct AdamConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // L2: added to the gradient
  bool amsgrad = false;
};

struct AdamWConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;  // decoupled: p *= 1 − lr·wd before the update
  bool amsgrad = false;
};

template <class T>
class Adam {
 public:
  using Config = AdamConfig;
  explicit Adam(Config c) : Adam(c, false) {}

  // Optimizer-state slots to plan (Planner::set_optim_slots) before building the arena.
  int slots() const { return cfg_.amsgrad ? 3 : 2; }
  const Config& config() const { return cfg_; }
  bool decoupled_weight_decay() const { return decoupled_; }
  double lr() const { return cfg_.lr; }
  void set_lr(double lr);
  int64_t step_count() const { return step_; }

  // One whole step: begin_step() then update() over the full dense prefix.
  void step(const Arena& arena);
  // Multi-threaded use: one thread calls begin_step() (t += 1, fixes this step's scalars from
  // the current lr), then every thread calls update() on a disjoint range, then they join.
  void begin_step();
  void update(const Arena& arena, Index begin, Index end) const;

 protected:
  Adam(Config c, bool decoupled);

 private:
  struct Scalars {  // this step's constants, rounded to T once
    T lerp_w = 0, beta2 = 0, one_minus_beta2 = 0, weight_decay = 0, decay = 1;
    T neg_step_size = 0, inv_bias2_sqrt = 1, eps = 0;
  };
  Config cfg_;
  bool decoupled_ = false;
  int64_t step_ = 0;
  Scalars s_;
};

// AdamW: Adam with decoupled weight decay and PyTorch's AdamW default wd = 1e-2.
template <class T>
class AdamW : public Adam<T> {
 public:
  using Config = AdamWConfig;
  explicit AdamW(Config c)
      : Adam<T>(AdamConfig{c.lr, c.beta1, c.beta2, c.eps, c.weight_decay, c.amsgrad}, true) {}
};

extern template class Adam<float>;
extern template class Adam<double>;

}  // namespace shoal::optim
