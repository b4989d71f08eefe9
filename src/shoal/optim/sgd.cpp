#include "shoal/optim/sgd.h"

#include "simd_map.h"

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

namespace {

template <class T, bool kDecay>
void sgd_pass(Index n, T* p, const T* g, T* buf, bool first, T neg_lr, T wd, T momentum,
              T one_minus_damp, bool nesterov) {
  using V = detail::Vec<T>;
  const auto grad = [=](const V& pv, const V& gv) {
    if constexpr (kDecay)
      return V(gv + wd * pv);  // grad.add(param, alpha=wd)
    else
      return gv;
  };
  if (buf == nullptr) {
    detail::simd_map<T>(
        n, [&](V& pv, const V& gv) { pv = pv + neg_lr * grad(pv, gv); }, p, g);
    return;
  }
  const auto apply = [&](auto first_step, auto nest) {
    detail::simd_map<T>(
        n,
        [&](V& pv, const V& gv, V& bv) {
          const V gd = grad(pv, gv);
          if constexpr (decltype(first_step)::value)
            bv = gd;  // buf = clone(grad)
          else
            bv = bv * momentum + one_minus_damp * gd;
          if constexpr (decltype(nest)::value)
            pv = pv + neg_lr * V(gd + momentum * bv);
          else
            pv = pv + neg_lr * bv;
        },
        p, g, buf);
  };
  using Yes = std::true_type;
  using No = std::false_type;
  if (first)
    nesterov ? apply(Yes{}, Yes{}) : apply(Yes{}, No{});
  else
    nesterov ? apply(No{}, Yes{}) : apply(No{}, No{});
}

}  // namespace

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
  const T neg_lr = static_cast<T>(-cfg_.lr);
  const T wd = static_cast<T>(cfg_.weight_decay);
  const T mom = static_cast<T>(cfg_.momentum);
  const T one_minus_damp = static_cast<T>(1.0 - cfg_.dampening);
  const bool first = step_ == 1;
  if (cfg_.weight_decay != 0.0)
    sgd_pass<T, true>(n, p, g, buf, first, neg_lr, wd, mom, one_minus_damp, cfg_.nesterov);
  else
    sgd_pass<T, false>(n, p, g, buf, first, neg_lr, wd, mom, one_minus_damp, cfg_.nesterov);
}

template class Sgd<float>;
template class Sgd<double>;

}  // namespace shoal::optim
