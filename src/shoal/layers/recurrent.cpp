#include "shoal/layers/recurrent.h"

#include <algorithm>

#include "shoal/layers/init.h"

namespace shoal::layers {

namespace {
// The dropout masks index rows as step · kStepRows + sequence: a chunk of sequences draws the
// masks the whole batch would, whatever the batch size.
constexpr Index kStepRows = Index(1) << 32;
}  // namespace

template <class T>
Recurrent<T>::Recurrent(Config c)
    : cfg(c), p(size_t(c.num_layers)), drop_({.p = c.dropout, .stream = c.stream}) {}

template <class T>
void Recurrent<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.in > 0 && cfg.hidden > 0 && cfg.num_layers > 0 && cfg.steps > 0,
              "Recurrent needs in, hidden, num_layers and steps > 0, got {}, {}, {}, {}", cfg.in,
              cfg.hidden, cfg.num_layers, cfg.steps);
  SHOAL_CHECK(cfg.proj == 0 || (cfg.cell == RnnCell::kLstm && cfg.proj < cfg.hidden),
              "Recurrent: a projection (proj {}) needs an LSTM with hidden size > proj, got {}",
              cfg.proj, cfg.hidden);
  SHOAL_CHECK(max_rows % cfg.steps == 0, "Recurrent: {} rows are not sequences of {} steps",
              max_rows, cfg.steps);
  const Index g = gates(), hd = cfg.hidden, rw = state(), n = max_rows;
  for (size_t k = 0; k < p.size(); ++k) {
    const std::string s = std::to_string(k);
    planner.param(p[k].w_ih, "weight_ih_l" + s, {g, in_of(k)});
    planner.param(p[k].w_hh, "weight_hh_l" + s, {g, rw});
    if (cfg.bias) {
      planner.param(p[k].b_ih, "bias_ih_l" + s, {g});
      planner.param(p[k].b_hh, "bias_hh_l" + s, {g});
    }
    if (cfg.proj > 0) planner.param(p[k].w_hr, "weight_hr_l" + s, {cfg.proj, hd});
  }
  drop_.plan(planner, n);
  const size_t nl = p.size();
  gates_.resize(nl), hn_.resize(nl), c_.resize(nl), m_.resize(nl);
  h_.resize(nl - 1), hd_.resize(nl - 1), dh_.resize(nl - 1);
  for (size_t k = 0; k < nl; ++k) {
    const std::string s = std::to_string(k);
    if (cfg.cell != RnnCell::kRnnTanh)
      planner.buffer(gates_[k], Region::kActivations, "gates_l" + s, {n, g});
    if (cfg.cell == RnnCell::kGru)
      planner.buffer(hn_[k], Region::kActivations, "hn_l" + s, {n, hd});
    if (cfg.cell == RnnCell::kLstm) planner.buffer(c_[k], Region::kActivations, "c_l" + s, {n, hd});
    if (cfg.proj > 0) planner.buffer(m_[k], Region::kActivations, "m_l" + s, {n, hd});
    if (k + 1 < nl) {
      planner.buffer(h_[k], Region::kActivations, "h_l" + s, {n, rw});
      if (cfg.dropout > 0) planner.buffer(hd_[k], Region::kActivations, "h_dropped_l" + s, {n, rw});
      planner.buffer(dh_[k], Region::kActivationGrads, "dh_l" + s, {n, rw});
    }
  }
  planned_steps_ = cfg.steps;
  const Index b = n / cfg.steps;
  carry_h_.resize(nl), carry_c_.resize(nl);
  for (size_t k = 0; k < nl; ++k) {
    const std::string s = std::to_string(k);
    planner.buffer(carry_h_[k], Region::kActivations, "carry_h_l" + s, {b, rw});
    if (cfg.cell == RnnCell::kLstm)
      planner.buffer(carry_c_[k], Region::kActivations, "carry_c_l" + s, {b, hd});
  }
  planner.buffer(scratch_, Region::kScratch, "scratch",
                 {std::max(kernels::rnn_forward_scratch(cfg.cell, cfg.steps, b, hd),
                           kernels::rnn_backward_scratch(cfg.cell, cfg.steps, b, hd))});
}

template <class T>
void Recurrent<T>::set_steps(Index steps) {
  SHOAL_CHECK(steps > 0 && steps <= planned_steps_,
              "Recurrent: {} steps outside the planned [1, {}]", steps, planned_steps_);
  cfg.steps = steps;
}

template <class T>
void Recurrent<T>::init(RngStream& rng) {
  const float bound = linear_bias_bound(cfg.hidden);
  for_each_param([&](const std::string&, Param<T>& q) { fill_uniform(q.value, bound, rng); });
}

template <class T>
kernels::RnnLayer<T> Recurrent<T>::layer(size_t k, Index batch) const {
  return {.cell = cfg.cell,
          .steps = cfg.steps,
          .batch = batch,
          .in = in_of(k),
          .hidden = cfg.hidden,
          .proj = cfg.proj,
          .w_ih = p[k].w_ih.value.data,
          .w_hh = p[k].w_hh.value.data,
          .b_ih = cfg.bias ? p[k].b_ih.value.data : nullptr,
          .b_hh = cfg.bias ? p[k].b_hh.value.data : nullptr,
          .w_hr = cfg.proj > 0 ? p[k].w_hr.value.data : nullptr};
}

template <class T>
kernels::RnnSaved<T> Recurrent<T>::saved(size_t k) {
  return {.gates = gates_[k].view.data,
          .hn = hn_[k].view.data,
          .c = c_[k].view.data,
          .m = m_[k].view.data};
}

template <class T>
void Recurrent<T>::forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index row0) {
  SHOAL_DCHECK(x.cols == cfg.in && y.cols == state() && x.rows == y.rows);
  SHOAL_DCHECK(x.ld == x.cols && y.ld == y.cols);
  const Index b = x.rows / cfg.steps, hd = state();
  const T* in = x.data;
  for (size_t k = 0; k < p.size(); ++k) {
    const bool last = k + 1 == p.size();
    T* out = last ? y.data : h_[k].view.data;
    kernels::rnn_forward<T>(layer(k, b), in, out, saved(k), scratch_.view.data);
    in = out;
    if (!last && dropping(ctx)) {
      for (Index t = 0; t < cfg.steps; ++t)
        drop_.forward(ctx, ConstMat<T>(out + t * b * hd, b, hd),
                      MatView<T>(hd_[k].view.data + t * b * hd, b, hd), t * kStepRows + row0);
      in = hd_[k].view.data;
    }
  }
}

template <class T>
void Recurrent<T>::forward_carry(const Ctx& ctx, ConstMat<T> x, MatView<T> y) {
  SHOAL_DCHECK(x.cols == cfg.in && y.cols == state() && x.rows == y.rows && !dropping(ctx));
  static_cast<void>(ctx);
  const Index b = x.rows / cfg.steps, rw = state(), hd = cfg.hidden, last = cfg.steps - 1;
  const bool lstm = cfg.cell == RnnCell::kLstm;
  const T* in = x.data;
  for (size_t k = 0; k < p.size(); ++k) {
    T* out = k + 1 == p.size() ? y.data : h_[k].view.data;
    kernels::RnnLayer<T> l = layer(k, b);
    if (carried_) {
      l.h0 = carry_h_[k].view.data;
      l.c0 = lstm ? carry_c_[k].view.data : nullptr;
    }
    kernels::rnn_forward<T>(l, in, out, saved(k), scratch_.view.data);
    // Copied out: the next call writes its steps where these lie.
    std::copy_n(out + last * b * rw, b * rw, carry_h_[k].view.data);
    if (lstm) std::copy_n(c_[k].view.data + last * b * hd, b * hd, carry_c_[k].view.data);
    in = out;
  }
  carried_ = true;
}

template <class T>
void Recurrent<T>::backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, MatView<T> dy,
                            MatView<T> dx, Index row0) {
  const Index b = x.rows / cfg.steps, hd = state();
  T* dout = dy.data;
  for (size_t k = p.size(); k-- > 0;) {
    const bool last = k + 1 == p.size();
    const T* out = last ? y.data : h_[k].view.data;
    const T* in = k == 0 ? x.data : dropping(ctx) ? hd_[k - 1].view.data : h_[k - 1].view.data;
    T* din = k > 0 ? dh_[k - 1].view.data : dx.data;
    kernels::rnn_backward<T>(layer(k, b), in, out, saved(k), dout, din,
                             {.dw_ih = p[k].w_ih.grad.data,
                              .dw_hh = p[k].w_hh.grad.data,
                              .db_ih = cfg.bias ? p[k].b_ih.grad.data : nullptr,
                              .db_hh = cfg.bias ? p[k].b_hh.grad.data : nullptr,
                              .dw_hr = cfg.proj > 0 ? p[k].w_hr.grad.data : nullptr},
                             scratch_.view.data);
    if (k > 0 && dropping(ctx))
      for (Index t = 0; t < cfg.steps; ++t) {
        const MatView<T> d(din + t * b * hd, b, hd);
        drop_.backward(ctx, ConstMat<T>{}, ConstMat<T>{}, d, d, t * kStepRows + row0);
      }
    dout = din;
  }
}

template <class T>
profile::Cost Recurrent<T>::forward_cost(double rows) const {
  const double e = sizeof(T), g = double(gates()), hd = double(cfg.hidden);
  // Gate math per hidden unit: LSTM 3 σ, 2 tanh and 5 flops; GRU 2 σ, 1 tanh and 8; RNN 1 tanh.
  const double per = cfg.cell == RnnCell::kLstm ? 15 : cfg.cell == RnnCell::kGru ? 14 : 1;
  profile::Cost c;
  for (size_t k = 0; k < p.size(); ++k) {
    c += profile::linear_forward(rows, double(in_of(k)), g, cfg.bias, profile::ActKind::kNone, e);
    c += profile::linear_forward(rows, double(state()), g, false, profile::ActKind::kNone, e);
    c += profile::elementwise(rows, hd, per, 2, e);
    if (cfg.proj > 0)
      c += profile::linear_forward(rows, hd, double(cfg.proj), false, profile::ActKind::kNone, e);
    if (k + 1 < p.size()) c += drop_.cost(rows, hd);
  }
  return c;
}

template <class T>
profile::Cost Recurrent<T>::backward_cost(double rows, bool dx) const {
  const double e = sizeof(T), g = double(gates()), hd = double(cfg.hidden);
  const double per = cfg.cell == RnnCell::kLstm ? 25 : cfg.cell == RnnCell::kGru ? 20 : 3;
  profile::Cost c;
  for (size_t k = 0; k < p.size(); ++k) {
    const double in = double(in_of(k));
    c += profile::linear_backward_dw(rows, in, g, cfg.bias, e);
    const double rw = double(state());
    c += profile::linear_backward_dw(rows, rw, g, cfg.bias, e);
    c += profile::linear_backward_dx(rows, rw, g, profile::ActKind::kNone, e);
    if (cfg.proj > 0) {
      c += profile::linear_backward_dw(rows, hd, double(cfg.proj), false, e);
      c += profile::linear_backward_dx(rows, hd, double(cfg.proj), profile::ActKind::kNone, e);
    }
    if (k > 0 || dx) c += profile::linear_backward_dx(rows, in, g, profile::ActKind::kNone, e);
    c += profile::elementwise(rows, hd, per, 4, e);
    if (k > 0) c += drop_.cost(rows, hd);
  }
  return c;
}

template struct Recurrent<float>;
template struct Recurrent<double>;

}  // namespace shoal::layers
