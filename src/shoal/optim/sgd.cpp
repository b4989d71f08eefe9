#include "shoal/optim/sgd.h"

#include "shoal/kernels/optim_update.h"

namespace shoal::optim {

template <class T>
Sgd<T>::Sgd(Config c) : cfg_(c) {
  SHOAL_CHECK(c.lr >= 0.0, "SGD: lr must be >= 0, got {}", c.lr);
  SHOAL_CHECK(c.momentum >= 0.0, "SGD: momentum must be >= 0, got {}", c.momentum);
  SHOAL_CHECK(c.weight_decay >= 0.0, "SGD: weight_decay must be >= 0, got {}", c.weight_decay);
  SHOAL_CHECK(!c.nesterov || (c.momentum > 0.0 && c.dampening == 0.0),
              "SGD: nesterov needs momentum > 0 and dampening = 0 (got momentum {}, dampening {})",
              c.momentum, c.dampening);
}

template <class T>
void Sgd<T>::set_lr(double lr) {
  SHOAL_CHECK(lr >= 0.0, "SGD: lr must be >= 0, got {}", lr);
  cfg_.lr = lr;
}

template <class T>
void Sgd<T>::begin_step() {
  ++step_;
}

template <class T>
void Sgd<T>::step(const Arena& arena) {
  begin_step();
  update(arena, 0, arena.dense_param_elems());
}

template <class T>
void Sgd<T>::update(const Arena& arena, Index begin, Index end) const {
  SHOAL_CHECK(step_ > 0, "SGD: update() before begin_step()");
  SHOAL_CHECK(0 <= begin && begin <= end && end <= arena.dense_param_elems(),
              "SGD: range [{}, {}) outside the dense prefix [0, {})", begin, end,
              arena.dense_param_elems());
  SHOAL_CHECK(arena.optim_slots() >= slots(), "SGD: needs {} optimizer slots, arena has {}",
              slots(), arena.optim_slots());
  T* p = arena.params<T>() + begin;
  const T* g = arena.grads<T>() + begin;
  T* buf = slots() > 0 ? arena.optim_state<T>(0) + begin : nullptr;
  const Index n = end - begin;
  const kernels::SgdScalars<T> s{.neg_lr = static_cast<T>(-cfg_.lr),
                                 .weight_decay = static_cast<T>(cfg_.weight_decay),
                                 .momentum = static_cast<T>(cfg_.momentum),
                                 .one_minus_damp = static_cast<T>(1.0 - cfg_.dampening),
                                 .decay = cfg_.weight_decay != 0.0,
                                 .first = step_ == 1,
                                 .nesterov = cfg_.nesterov};
  kernels::sgd_update<T>(n, p, g, buf, s);
}

template class Sgd<float>;
template class Sgd<double>;

}  // namespace shoal::optim
