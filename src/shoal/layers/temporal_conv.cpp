#include "shoal/layers/temporal_conv.h"

#include <algorithm>

#include "shoal/layers/init.h"

namespace shoal::layers {

template <class T>
TemporalConv<T>::TemporalConv(Config c) : cfg(std::move(c)), p(cfg.dilations.size()) {}

template <class T>
void TemporalConv<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.in > 0 && cfg.out > 0 && cfg.kernel > 0 && cfg.steps > 0 && !p.empty(),
              "TemporalConv needs in, out, kernel, steps and layers > 0, got {}, {}, {}, {}, {}",
              cfg.in, cfg.out, cfg.kernel, cfg.steps, p.size());
  SHOAL_CHECK(max_rows % cfg.steps == 0, "TemporalConv: {} rows are not sequences of {} steps",
              max_rows, cfg.steps);
  for (int64_t d : cfg.dilations) SHOAL_CHECK(d >= 1, "TemporalConv: dilation {} < 1", d);
  for (size_t j = 0; j < p.size(); ++j) {
    const std::string s = "tcn." + std::to_string(j) + ".conv.";
    planner.param(p[j].weight, s + "weight", {cfg.out, in_of(j), cfg.kernel});
    planner.param(p[j].bias, s + "bias", {cfg.out});
  }
  const size_t nl = p.size();
  h_.resize(nl - 1), dh_.resize(nl - 1);
  for (size_t j = 0; j + 1 < nl; ++j) {
    const std::string s = std::to_string(j);
    planner.buffer(h_[j], Region::kActivations, "h_l" + s, {max_rows, cfg.out});
    planner.buffer(dh_[j], Region::kActivationGrads, "dh_l" + s, {max_rows, cfg.out});
  }
  planner.buffer(scratch_, Region::kScratch, "scratch",
                 {kernels::causal_conv_scratch(std::max(cfg.in, cfg.out), cfg.out, cfg.kernel)});
}

template <class T>
void TemporalConv<T>::init(RngStream& rng) {
  for (auto& l : p) {
    const Index fan_in = l.weight.value.numel() / cfg.out;
    fill_uniform(l.weight.value, kaiming_uniform_bound(fan_in), rng);
    fill_uniform(l.bias.value, linear_bias_bound(fan_in), rng);
  }
}

template <class T>
kernels::CausalConv<T> TemporalConv<T>::conv(size_t j, Index batch) const {
  return {.steps = cfg.steps,
          .batch = batch,
          .in = in_of(j),
          .out = cfg.out,
          .kernel = cfg.kernel,
          .dilation = cfg.dilations[j],
          .act = cfg.act,
          .w = p[j].weight.value.data,
          .b = p[j].bias.value.data};
}

template <class T>
void TemporalConv<T>::forward(const Ctx&, ConstMat<T> x, MatView<T> y) {
  SHOAL_DCHECK(x.cols == cfg.in && y.cols == cfg.out && x.rows == y.rows);
  SHOAL_DCHECK(x.ld == x.cols && y.ld == y.cols);
  const Index b = x.rows / cfg.steps;
  const T* in = x.data;
  for (size_t j = 0; j < p.size(); ++j) {
    T* out = j + 1 == p.size() ? y.data : h_[j].view.data;
    kernels::causal_conv_forward<T>(conv(j, b), in, out, scratch_.view.data);
    in = out;
  }
}

template <class T>
void TemporalConv<T>::backward(const Ctx&, ConstMat<T> x, ConstMat<T> y, MatView<T> dy,
                               MatView<T> dx) {
  const Index b = x.rows / cfg.steps;
  T* dout = dy.data;
  for (size_t j = p.size(); j-- > 0;) {
    const T* out = j + 1 == p.size() ? y.data : h_[j].view.data;
    const T* in = j == 0 ? x.data : h_[j - 1].view.data;
    T* din = j > 0 ? dh_[j - 1].view.data : dx.data;
    kernels::causal_conv_backward<T>(conv(j, b), in, out, dout, din, p[j].weight.grad.data,
                                     p[j].bias.grad.data, scratch_.view.data);
    dout = din;
  }
}

template <class T>
double TemporalConv<T>::reach(size_t j, Index k) const {
  const Index shift = (cfg.kernel - 1 - k) * cfg.dilations[j];
  return double(std::max<Index>(cfg.steps - shift, 0)) / double(cfg.steps);
}

template <class T>
profile::Cost TemporalConv<T>::forward_cost(double rows) const {
  const double e = sizeof(T), o = double(cfg.out);
  const double act = cfg.act == ConvAct::kTanh ? 1 : cfg.act == ConvAct::kRelu ? 1 : 0;
  profile::Cost c;
  for (size_t j = 0; j < p.size(); ++j) {
    for (Index k = 0; k < cfg.kernel; ++k)
      c += profile::linear_forward(rows * reach(j, k), double(in_of(j)), o, false,
                                   profile::ActKind::kNone, e);
    c += profile::elementwise(rows, o, 1 + act, 1, e);
  }
  return c;
}

template <class T>
profile::Cost TemporalConv<T>::backward_cost(double rows, bool dx) const {
  const double e = sizeof(T), o = double(cfg.out);
  profile::Cost c;
  for (size_t j = 0; j < p.size(); ++j) {
    const double in = double(in_of(j));
    for (Index k = 0; k < cfg.kernel; ++k) {
      const double r = rows * reach(j, k);
      c += profile::linear_backward_dw(r, in, o, false, e);
      if (j > 0 || dx) c += profile::linear_backward_dx(r, in, o, profile::ActKind::kNone, e);
    }
    c += profile::elementwise(rows, o, 3, 2, e);  // derivative, product, bias sum
  }
  return c;
}

template struct TemporalConv<float>;
template struct TemporalConv<double>;

}  // namespace shoal::layers
