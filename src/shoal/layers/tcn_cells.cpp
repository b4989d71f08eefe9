#include "shoal/layers/tcn_cells.h"

#include <algorithm>
#include <cmath>

#include "shoal/kernels/elementwise.h"

namespace shoal::layers {

template <class T>
void dropout_time_major(Dropout<T>& drop, const Ctx& ctx, MatView<T> x, Index steps, Index window0,
                        bool backward) {
  if (!ctx.training || drop.cfg.p == 0.0) return;
  const Index b = x.rows / steps;
  for (Index t = 0; t < steps; ++t)
    for (Index w = 0; w < b; ++w) {
      const MatView<T> row(x.row(t * b + w), 1, x.cols);
      const Index row0 = (window0 + w) * steps + t;
      if (backward)
        drop.backward(ctx, row, row, row, row, row0);
      else
        drop.forward(ctx, row, row, row0);
    }
}

template <class T>
TCNCells<T>::TCNCells(Config c) : cfg(c), p(size_t(std::max<Index>(c.cells, 0))) {
  for (size_t j = 0; j < p.size(); ++j)
    drop_.push_back(Dropout<T>({.p = cfg.dropout, .stream = cfg.stream + j}));
}

template <class T>
void TCNCells<T>::plan(Planner& planner, Index max_rows) {
  const Index C = cfg.channels, K = cfg.kernel;
  SHOAL_CHECK(C > 0 && K > 0 && cfg.steps > 0 && !p.empty(),
              "TCNCells needs channels, kernel, steps and cells > 0, got {}, {}, {}, {}", C, K,
              cfg.steps, p.size());
  SHOAL_CHECK(max_rows % cfg.steps == 0, "TCNCells: {} rows are not sequences of {} steps",
              max_rows, cfg.steps);
  const size_t n = p.size();
  for (size_t j = 0; j < n; ++j) {
    const std::string s = std::to_string(j);
    planner.param(p[j].w1, s + ".conv1.weight", {C, C, K});
    planner.param(p[j].b1, s + ".conv1.bias", {C});
    planner.param(p[j].w2, s + ".conv2.weight", {2 * C, C, 1});
    planner.param(p[j].b2, s + ".conv2.bias", {2 * C});
    drop_[j].plan(planner, max_rows);
  }
  h_.resize(n - 1), a_.resize(n), m_.resize(n);
  for (size_t j = 0; j < n; ++j) {
    const std::string s = std::to_string(j);
    if (j + 1 < n) planner.buffer(h_[j], Region::kActivations, "h" + s, {max_rows, C});
    planner.buffer(a_[j], Region::kActivations, "a" + s, {max_rows, C});
    planner.buffer(m_[j], Region::kActivations, "m" + s, {max_rows, C});
  }
  planner.buffer(z_, Region::kScratch, "z", {max_rows, 2 * C});
  planner.buffer(dz_, Region::kActivationGrads, "dz", {max_rows, 2 * C});
  planner.buffer(dh_, Region::kActivationGrads, "dh", {max_rows, C});
  planner.buffer(dm_, Region::kActivationGrads, "dm", {max_rows, C});
  planner.buffer(tmp_, Region::kActivationGrads, "tmp", {max_rows, C});
  planner.buffer(
      scratch_, Region::kScratch, "scratch",
      {std::max(kernels::causal_conv_scratch(C, C, K), kernels::causal_conv_scratch(C, 2 * C, 1))});
}

template <class T>
void TCNCells<T>::init(RngStream& rng) {
  // −k + 2k·r in float, as neuralforecast's CustomConv1d writes it: 2k and −k rounded to float
  // first (torch's scalar operands of a float tensor), then one rounding per operation.
  auto fill = [&](TensorView<T>& v, Index fan_in) {
    const double k = std::sqrt(1.0 / double(fan_in));
    const auto two_k = static_cast<float>(2 * k), neg_k = static_cast<float>(-k);
    for (auto& e : v) {
      const float scaled = rng.uniform() * two_k;
      e = static_cast<T>(scaled + neg_k);
    }
  };
  const Index C = cfg.channels;
  for (auto& c : p) {
    fill(c.w1.value, C * cfg.kernel);
    fill(c.b1.value, C * cfg.kernel);
    fill(c.w2.value, C);
    fill(c.b2.value, C);
  }
}

template <class T>
kernels::CausalConv<T> TCNCells<T>::conv1(size_t j, Index batch) const {
  return {.steps = cfg.steps,
          .batch = batch,
          .in = cfg.channels,
          .out = cfg.channels,
          .kernel = cfg.kernel,
          .dilation = Index{1} << j,
          .act = kernels::ConvAct::kIdentity,
          .dir = cfg.dir,
          .w = p[j].w1.value.data,
          .b = p[j].b1.value.data};
}

template <class T>
kernels::CausalConv<T> TCNCells<T>::conv2(size_t j, Index batch) const {
  return {.steps = cfg.steps,
          .batch = batch,
          .in = cfg.channels,
          .out = 2 * cfg.channels,
          .kernel = 1,
          .dilation = 1,
          .act = kernels::ConvAct::kIdentity,
          .w = p[j].w2.value.data,
          .b = p[j].b2.value.data};
}

template <class T>
void TCNCells<T>::forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index window0) {
  const Index C = cfg.channels, R = x.rows, b = R / cfg.steps;
  SHOAL_DCHECK(x.cols == C && y.cols == C && y.rows == R && x.ld == C && y.ld == C);
  const T* h = x.data;
  T* z = z_.view.data;
  for (size_t j = 0; j < p.size(); ++j) {
    T* a = a_[j].view.data;
    T* m = m_[j].view.data;
    kernels::causal_conv_forward<T>(conv1(j, b), h, a, scratch_.view.data);
    kernels::gelu_forward<T>(R * C, a, m);
    dropout_time_major<T>(drop_[j], ctx, MatView<T>(m, R, C), cfg.steps, window0, false);
    kernels::causal_conv_forward<T>(conv2(j, b), m, z, scratch_.view.data);
    T* next = j + 1 < p.size() ? h_[j].view.data : nullptr;
    for (Index r = 0; r < R; ++r) {
      const T* zr = z + r * 2 * C;
      T* yr = y.data + r * C;
      if (next) {
        const T* hr = h + r * C;
        T* nr = next + r * C;
        for (Index c = 0; c < C; ++c) nr[c] = hr[c] + zr[c];
      }
      for (Index c = 0; c < C; ++c) yr[c] = (j == 0 ? T(0) : yr[c]) + zr[C + c];
    }
    h = next;
  }
}

template <class T>
void TCNCells<T>::backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx,
                           Index window0) {
  const Index C = cfg.channels, R = x.rows, b = R / cfg.steps;
  T* dz = dz_.view.data;
  T* dh = dh_.view.data;  // the gradient of the state leaving cell j (none after the last)
  T* dm = dm_.view.data;
  T* tmp = tmp_.view.data;
  std::fill_n(dh, R * C, T(0));
  for (size_t j = p.size(); j-- > 0;) {
    for (Index r = 0; r < R; ++r) {
      std::copy_n(dh + r * C, C, dz + r * 2 * C);
      std::copy_n(dy.data + r * dy.ld, C, dz + r * 2 * C + C);
    }
    const T* m = m_[j].view.data;
    const T* a = a_[j].view.data;
    // conv2's output is not read (no activation): z_ holds the last cell's only.
    kernels::causal_conv_backward<T>(conv2(j, b), m, z_.view.data, dz, dm, p[j].w2.grad.data,
                                     p[j].b2.grad.data, scratch_.view.data);
    dropout_time_major<T>(drop_[j], ctx, MatView<T>(dm, R, C), cfg.steps, window0, true);
    kernels::gelu_backward<T>(R * C, a, dm, dm);
    const T* h = j == 0 ? x.data : h_[j - 1].view.data;
    const bool need_dx = j > 0 || dx.data != nullptr;
    kernels::causal_conv_backward<T>(conv1(j, b), h, a, dm, need_dx ? tmp : nullptr,
                                     p[j].w1.grad.data, p[j].b1.grad.data, scratch_.view.data);
    if (need_dx)
      for (Index i = 0; i < R * C; ++i) dh[i] += tmp[i];
  }
  if (dx.data)
    for (Index r = 0; r < R; ++r) std::copy_n(dh + r * C, C, dx.data + r * dx.ld);
}

template <class T>
profile::Cost TCNCells<T>::forward_cost(double rows) const {
  const double e = sizeof(T), c = double(cfg.channels);
  profile::Cost cost;
  for (size_t j = 0; j < p.size(); ++j) {
    cost +=
        profile::linear_forward(rows * double(cfg.kernel), c, c, true, profile::ActKind::kNone, e);
    cost += profile::elementwise(rows, c, 20, 1, e);  // GELU
    cost += drop_[j].cost(rows, c);
    cost += profile::linear_forward(rows, c, 2 * c, true, profile::ActKind::kNone, e);
    cost += profile::elementwise(rows, 2 * c, 1, 2, e);
  }
  return cost;
}

template <class T>
profile::Cost TCNCells<T>::backward_cost(double rows, bool dx) const {
  const double e = sizeof(T), c = double(cfg.channels);
  profile::Cost cost;
  for (size_t j = 0; j < p.size(); ++j) {
    cost += profile::linear_backward_dw(rows, c, 2 * c, true, e);
    cost += profile::linear_backward_dx(rows, c, 2 * c, profile::ActKind::kNone, e);
    cost += drop_[j].cost(rows, c);
    cost += profile::elementwise(rows, c, 30, 2, e);  // GELU's derivative
    cost += profile::linear_backward_dw(rows * double(cfg.kernel), c, c, true, e);
    if (j > 0 || dx)
      cost +=
          profile::linear_backward_dx(rows * double(cfg.kernel), c, c, profile::ActKind::kNone, e);
  }
  return cost;
}

template void dropout_time_major<float>(Dropout<float>&, const Ctx&, MatView<float>, Index, Index,
                                        bool);
template void dropout_time_major<double>(Dropout<double>&, const Ctx&, MatView<double>, Index,
                                         Index, bool);
template struct TCNCells<float>;
template struct TCNCells<double>;

}  // namespace shoal::layers
