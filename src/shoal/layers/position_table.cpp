#include "shoal/layers/position_table.h"

#include "shoal/core/error.h"
#include "shoal/layers/init.h"

namespace shoal::layers {

template <class T>
void PositionTable<T>::plan(Planner& planner, Index) {
  SHOAL_CHECK(cfg.tokens > 0 && cfg.width > 0, "a position table needs tokens and width > 0");
  if (cfg.learn)
    planner.param(w_pos, "W_pos", {cfg.tokens, cfg.width});
  else
    planner.buffer(w_fixed, Region::kState, "W_pos", {cfg.tokens, cfg.width});
}

template <class T>
void PositionTable<T>::init(RngStream& rng) {
  if (cfg.learn)
    fill_uniform(w_pos.value, cfg.bound, rng);
  else
    fill_uniform(w_fixed.view, cfg.bound, rng);
}

template <class T>
ConstMat<T> PositionTable<T>::table() const {
  return cfg.learn ? ConstMat<T>(w_pos.value.mat()) : ConstMat<T>(w_fixed.mat());
}

template <class T>
void PositionTable<T>::forward(ConstMat<T> x, MatView<T> y) const {
  const ConstMat<T> w = table();
  for (Index r = 0; r < x.rows; ++r) {
    const T* wr = w.row(r % cfg.tokens);
    for (Index e = 0; e < cfg.width; ++e) y(r, e) = x(r, e) + wr[e];
  }
}

template <class T>
void PositionTable<T>::backward(ConstMat<T> dy) {
  if (!cfg.learn) return;
  const MatView<T> g = w_pos.grad.mat();
  for (Index r = 0; r < dy.rows; ++r) {
    T* gr = g.row(r % cfg.tokens);
    for (Index e = 0; e < cfg.width; ++e) gr[e] += dy(r, e);
  }
}

template struct PositionTable<float>;
template struct PositionTable<double>;

}  // namespace shoal::layers
