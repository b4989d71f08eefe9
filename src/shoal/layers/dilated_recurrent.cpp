#include "shoal/layers/dilated_recurrent.h"

#include <algorithm>

namespace shoal::layers {

template <class T>
DilatedRecurrent<T>::DilatedRecurrent(Config c) : cfg(std::move(c)) {
  for (size_t g = 0; g < cfg.groups.size(); ++g) {
    for (size_t l = 0; l < cfg.groups[g].size(); ++l) {
      const int64_t r = cfg.groups[g][l];
      SHOAL_CHECK(r >= 1, "DilatedRecurrent: dilation {} < 1", r);
      const size_t i = layers_.size();
      rate_.push_back(r);
      group_of_.push_back(g);
      name_.push_back(std::to_string(g) + ".cells." + std::to_string(l) + ".");
      const Index p = (cfg.steps + r - 1) / r;
      layers_.push_back(std::make_unique<Recurrent<T>>(typename Recurrent<T>::Config{
          .cell = cfg.cell, .in = in_of(i), .hidden = cfg.hidden, .num_layers = 1, .steps = p}));
    }
    SHOAL_CHECK(!cfg.groups[g].empty(), "DilatedRecurrent: group {} has no layer", g);
    last_.push_back(layers_.size() - 1);
  }
}

template <class T>
Index DilatedRecurrent<T>::padded(size_t i) const {
  const Index r = rate_[i];
  return (cfg.steps + r - 1) / r * r;
}

template <class T>
void DilatedRecurrent<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.in > 0 && cfg.hidden > 0 && cfg.steps > 0 && !layers_.empty(),
              "DilatedRecurrent needs in, hidden, steps and layers > 0, got {}, {}, {}, {}", cfg.in,
              cfg.hidden, cfg.steps, layers_.size());
  SHOAL_CHECK(max_rows % cfg.steps == 0, "DilatedRecurrent: {} rows are not sequences of {} steps",
              max_rows, cfg.steps);
  const Index b = max_rows / cfg.steps;
  max_padded_ = 0;
  for (size_t i = 0; i < layers_.size(); ++i) max_padded_ = std::max(max_padded_, padded(i));
  const Index rows = max_padded_ * b;
  for (size_t i = 0; i < layers_.size(); ++i) {
    planner.push_scope(name_[i]);
    layers_[i]->plan(planner, padded(i) * b);
    planner.pop_scope();
  }
  planner.buffer(xp_, Region::kActivations, "x_padded", {rows, cfg.in});
  h_.resize(layers_.size()), dh_.resize(layers_.size());
  for (size_t i = 0; i < layers_.size(); ++i) {
    planner.buffer(h_[i], Region::kActivations, "h" + std::to_string(i), {rows, cfg.hidden});
    planner.buffer(dh_[i], Region::kActivationGrads, "dh" + std::to_string(i), {rows, cfg.hidden});
  }
  g_.resize(cfg.groups.size()), dg_.resize(cfg.groups.size());
  for (size_t g = 1; g < cfg.groups.size(); ++g) {
    planner.buffer(g_[g], Region::kActivations, "group" + std::to_string(g), {rows, cfg.hidden});
    planner.buffer(dg_[g], Region::kActivationGrads, "dgroup" + std::to_string(g),
                   {rows, cfg.hidden});
  }
}

template <class T>
void DilatedRecurrent<T>::init(RngStream& rng) {
  for (auto& l : layers_) l->init(rng);
}

template <class T>
void DilatedRecurrent<T>::forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y) {
  SHOAL_DCHECK(x.cols == cfg.in && y.cols == cfg.hidden && x.rows == y.rows);
  SHOAL_DCHECK(x.ld == x.cols && y.ld == y.cols);
  const Index b = x.rows / cfg.steps, n = x.rows, hd = cfg.hidden;
  // The layer's input: x, the previous layer's output, or the previous group's.
  T* in = xp_.view.data;
  std::copy_n(x.data, n * cfg.in, in);
  Index in_cols = cfg.in;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Index rows = padded(i) * b;
    std::fill(in + n * in_cols, in + rows * in_cols, T(0));  // the padded steps
    T* out = h_[i].view.data;
    layers_[i]->forward(ctx, ConstMat<T>(in, rows, in_cols), MatView<T>(out, rows, hd));
    const size_t g = group_of_[i];
    if (i == last_[g] && g > 0) {
      T* gout = g_[g].view.data;
      const T* res = g == 1 ? h_[last_[0]].view.data : g_[g - 1].view.data;
      for (Index e = 0; e < n * hd; ++e) gout[e] = out[e] + res[e];
      out = gout;
    }
    in = out;
    in_cols = hd;
  }
  std::copy_n(in, n * hd, y.data);
}

template <class T>
void DilatedRecurrent<T>::backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T>, MatView<T> dy,
                                   MatView<T> dx) {
  SHOAL_CHECK(dx.data == nullptr, "DilatedRecurrent computes no input gradient");
  (void)x;
  const Index b = x.rows / cfg.steps, n = x.rows, hd = cfg.hidden;
  const size_t ng = cfg.groups.size();
  // dG of the last group: dy.
  T* dgroup = ng > 1 ? dg_[ng - 1].view.data : dh_[last_[0]].view.data;
  std::copy_n(dy.data, n * hd, dgroup);
  for (size_t i = layers_.size(); i-- > 0;) {
    const size_t g = group_of_[i];
    const Index rows = padded(i) * b;
    T* d = dh_[i].view.data;
    if (i == last_[g] && g > 0) std::copy_n(dg_[g].view.data, n * hd, d);
    std::fill(d + n * hd, d + rows * hd, T(0));  // the padded steps' outputs reach nothing
    // The layer's input, as the forward left it (rows past n zero).
    const bool first_of_group = i == 0 || group_of_[i - 1] != g;
    const T* in = i == 0                      ? xp_.view.data
                  : !first_of_group || g == 1 ? h_[i - 1].view.data
                                              : g_[g - 1].view.data;
    const Index in_cols = in_of(i);
    // Where its input gradient goes: none (x), the previous layer's dh, or the previous
    // group's gradient (which the residual adds dG_g to).
    T* din = nullptr;
    if (i > 0) din = first_of_group && g > 1 ? dg_[g - 1].view.data : dh_[i - 1].view.data;
    layers_[i]->backward(ctx, ConstMat<T>(in, rows, in_cols),
                         ConstMat<T>(h_[i].view.data, rows, hd), MatView<T>(d, rows, hd),
                         din ? MatView<T>(din, rows, in_cols) : MatView<T>{});
    if (i > 0 && first_of_group) {
      const T* dres = dg_[g].view.data;
      for (Index e = 0; e < n * hd; ++e) din[e] += dres[e];
    }
  }
}

template <class T>
profile::Cost DilatedRecurrent<T>::forward_cost(double rows) const {
  profile::Cost c;
  const double t = double(cfg.steps);
  for (size_t i = 0; i < layers_.size(); ++i)
    c += layers_[i]->forward_cost(rows * double(padded(i)) / t);
  return c;
}

template <class T>
profile::Cost DilatedRecurrent<T>::backward_cost(double rows, bool dx) const {
  profile::Cost c;
  const double t = double(cfg.steps);
  for (size_t i = 0; i < layers_.size(); ++i)
    c += layers_[i]->backward_cost(rows * double(padded(i)) / t, i > 0 || dx);
  return c;
}

template struct DilatedRecurrent<float>;
template struct DilatedRecurrent<double>;

}  // namespace shoal::layers
