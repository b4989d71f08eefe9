#include "shoal/optim/adam.h"

#include <cmath>

#include "adam_math.h"

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

namespace {

enum class Decay { kNone, kL2, kDecoupled };

template <class T, Decay kDecay, bool kAmsgrad, class S>
void adam_pass(Index n, T* p, const T* g, T* m, T* v, T* vmax, const S& s) {
  using V = detail::Vec<T>;
  const auto moments = [&](V& pv, const V& gv, V& mv, V& vv) {
    V gd = gv;
    if constexpr (kDecay == Decay::kDecoupled) pv = pv * s.decay;       // param.mul_(1 - lr*wd)
    if constexpr (kDecay == Decay::kL2) gd = gv + s.weight_decay * pv;  // grad.add(param, wd)
    detail::adam_moments<T>(gd, mv, vv, s.lerp_w, s.beta2, s.one_minus_beta2);
  };
  const auto apply = [&](V& pv, const V& mv, const V& vv) {
    detail::adam_apply<T>(pv, mv, vv, s.neg_step_size, s.inv_bias2_sqrt, s.eps);
  };
  if constexpr (kAmsgrad) {
    detail::simd_map<T>(
        n,
        [&](V& pv, const V& gv, V& mv, V& vv, V& wv) {
          moments(pv, gv, mv, vv);
          wv = detail::stdx::max(wv, vv);
          apply(pv, mv, wv);
        },
        p, g, m, v, vmax);
  } else {
    detail::simd_map<T>(
        n,
        [&](V& pv, const V& gv, V& mv, V& vv) {
          moments(pv, gv, mv, vv);
          apply(pv, mv, vv);
        },
        p, g, m, v);
  }
}

template <class T, Decay kDecay, class S>
void adam_dispatch(bool amsgrad, Index n, T* p, const T* g, T* m, T* v, T* vmax, const S& s) {
  if (amsgrad)
    adam_pass<T, kDecay, true>(n, p, g, m, v, vmax, s);
  else
    adam_pass<T, kDecay, false>(n, p, g, m, v, vmax, s);
}

}  // namespace

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
  if (cfg_.weight_decay == 0.0)
    adam_dispatch<T, Decay::kNone>(cfg_.amsgrad, n, p, g, m, v, vmax, s_);
  else if (decoupled_)
    adam_dispatch<T, Decay::kDecoupled>(cfg_.amsgrad, n, p, g, m, v, vmax, s_);
  else
    adam_dispatch<T, Decay::kL2>(cfg_.amsgrad, n, p, g, m, v, vmax, s_);
}

template class Adam<float>;
template class Adam<double>;

}  // namespace shoal::optim
