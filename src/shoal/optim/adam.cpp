#include "shoal/optim/adam.h"

#include <cmath>

#include "shoal/kernels/optim_update.h"

namespace shoal::optim {

namespace {

void check_adam(const AdamConfig& c) {
  SHOAL_CHECK(c.lr >= 0.0, "Adam: lr must be >= 0, got {}", c.lr);
  SHOAL_CHECK(c.eps >= 0.0, "Adam: eps must be >= 0, got {}", c.eps);
  SHOAL_CHECK(c.beta1 >= 0.0 && c.beta1 < 1.0, "Adam: beta1 must be in [0, 1), got {}", c.beta1);
  SHOAL_CHECK(c.beta2 >= 0.0 && c.beta2 < 1.0, "Adam: beta2 must be in [0, 1), got {}", c.beta2);
  SHOAL_CHECK(c.weight_decay >= 0.0, "Adam: weight_decay must be >= 0, got {}", c.weight_decay);
}

}  // namespace

template <class T>
Adam<T>::Adam(Config c, bool decoupled) : cfg_(c), decoupled_(decoupled) {
  check_adam(c);
}

template <class T>
void Adam<T>::set_lr(double lr) {
  SHOAL_CHECK(lr >= 0.0, "Adam: lr must be >= 0, got {}", lr);
  cfg_.lr = lr;
}

template <class T>
void Adam<T>::begin_step() {
  ++step_;
  // As torch: Python floats (double) for the bias corrections and the step size; each becomes
  // a T scalar when it meets the tensor.
  const double t = static_cast<double>(step_);
  const double bias1 = 1.0 - std::pow(cfg_.beta1, t);
  const double bias2 = 1.0 - std::pow(cfg_.beta2, t);
  s_.lerp_w = static_cast<T>(1.0 - cfg_.beta1);
  s_.beta2 = static_cast<T>(cfg_.beta2);
  s_.one_minus_beta2 = static_cast<T>(1.0 - cfg_.beta2);
  s_.weight_decay = static_cast<T>(cfg_.weight_decay);
  s_.decay = static_cast<T>(1.0 - cfg_.lr * cfg_.weight_decay);
  s_.neg_step_size = static_cast<T>(-(cfg_.lr / bias1));
  s_.inv_bias2_sqrt = static_cast<T>(1.0 / std::sqrt(bias2));
  s_.eps = static_cast<T>(cfg_.eps);
}

template <class T>
void Adam<T>::step(const Arena& arena) {
  begin_step();
  update(arena, 0, arena.dense_param_elems());
}

template <class T>
void Adam<T>::update(const Arena& arena, Index begin, Index end) const {
  SHOAL_CHECK(step_ > 0, "Adam: update() before begin_step()");
  SHOAL_CHECK(0 <= begin && begin <= end && end <= arena.dense_param_elems(),
              "Adam: range [{}, {}) outside the dense prefix [0, {})", begin, end,
              arena.dense_param_elems());
  SHOAL_CHECK(arena.optim_slots() >= slots(), "Adam: needs {} optimizer slots, arena has {}",
              slots(), arena.optim_slots());
  const Index n = end - begin;
  T* p = arena.params<T>() + begin;
  const T* g = arena.grads<T>() + begin;
  T* m = arena.optim_state<T>(0) + begin;
  T* v = arena.optim_state<T>(1) + begin;
  T* vmax = cfg_.amsgrad ? arena.optim_state<T>(2) + begin : nullptr;
  const kernels::AdamDecay decay = cfg_.weight_decay == 0.0 ? kernels::AdamDecay::kNone
                                   : decoupled_             ? kernels::AdamDecay::kDecoupled
                                                            : kernels::AdamDecay::kL2;
  const kernels::AdamScalars<T> s{.lerp_w = s_.lerp_w,
                                  .beta2 = s_.beta2,
                                  .one_minus_beta2 = s_.one_minus_beta2,
                                  .weight_decay = s_.weight_decay,
                                  .decay = s_.decay,
                                  .neg_step_size = s_.neg_step_size,
                                  .inv_bias2_sqrt = s_.inv_bias2_sqrt,
                                  .eps = s_.eps};
  kernels::adam_update<T>(decay, cfg_.amsgrad, n, p, g, m, v, vmax, s);
}

template class Adam<float>;
template class Adam<double>;

}  // namespace shoal::optim
