#include "shoal/models/mlp_forecast.h"

#include <algorithm>

#include "shoal/models/mlp_multivariate.h"
#include "shoal/models/zones.h"
#include "shoal/profile/cost.h"

namespace shoal::models {

template <class T>
MlpStack<T>::MlpStack(Index in, Index hidden, Index num_layers, Index out)
    : out_({.in = hidden, .out = out}) {
  SHOAL_CHECK(in > 0 && hidden > 0 && num_layers > 0 && out > 0,
              "MLP needs in, hidden_size, num_layers and out > 0, got {} {} {} {}", in, hidden,
              num_layers, out);
  // Planned layers are bound by address: the vectors never grow after this.
  layers_.reserve(size_t(num_layers));
  for (Index i = 0; i < num_layers; ++i)
    layers_.push_back(
        layers::Linear<T>({.in = i == 0 ? in : hidden, .out = hidden, .act = layers::Act::kRelu}));
  act_.resize(size_t(num_layers));
}

template <class T>
void MlpStack<T>::plan(Planner& planner, Index max_rows) {
  const Index k = out_.cfg.in;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const std::string p = "mlp." + std::to_string(i) + ".";
    planner.push_scope(p);
    layers_[i].plan(planner, max_rows);
    planner.pop_scope();
    planner.buffer(act_[i], Region::kActivations, p + "z", {max_rows, k});
  }
  planner.push_scope("out.");
  out_.plan(planner, max_rows);
  planner.pop_scope();
  // No input gradient for the first layer: with one layer, no hidden gradient ever flows back.
  for (int j = 0; j < (layers_.size() > 1 ? 2 : 1); ++j)
    planner.buffer(dact_[j], Region::kActivationGrads, "mlp.dz" + std::to_string(j), {max_rows, k});
  planner.buffer(y_, Region::kActivations, "out.y", {max_rows, out_.cfg.out});
}

template <class T>
void MlpStack<T>::init(RngStream& rng) {
  for (auto& l : layers_) l.init(rng);
  out_.init(rng);
}

template <class T>
MatView<T> MlpStack<T>::forward(const Ctx& ctx, ConstMat<T> x) {
  const Index r = x.rows;
  profile::ZoneChain zone(ctx.profiler, r);
  ConstMat<T> in = x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (!zones_.empty()) zone.next(zones_[i].forward);
    MatView<T> z = act_[i].mat().rows_block(0, r);
    layers_[i].forward(ctx, in, z);
    in = z;
  }
  if (!zones_.empty()) zone.next(zones_.back().forward);
  MatView<T> y = y_.mat().rows_block(0, r);
  out_.forward(ctx, in, y);
  return y;
}

template <class T>
void MlpStack<T>::backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> dout, MatView<T> dx0) {
  const Index r = x.rows;
  const size_t n = layers_.size();
  profile::ZoneChain zone(ctx.profiler, r);
  if (!zones_.empty()) zone.next(zones_.back().backward);
  int cur = 0;
  MatView<T> dz = dact_[cur].mat().rows_block(0, r);
  out_.backward(ctx, act_[n - 1].mat().rows_block(0, r), y_.mat().rows_block(0, r), dout, dz);
  for (size_t i = n; i-- > 0;) {
    if (!zones_.empty()) zone.next(zones_[i].backward);
    const ConstMat<T> xi = i == 0 ? x : ConstMat<T>(act_[i - 1].mat().rows_block(0, r));
    MatView<T> dx = i == 0 ? dx0 : dact_[1 - cur].mat().rows_block(0, r);
    layers_[i].backward(ctx, xi, act_[i].mat().rows_block(0, r), dact_[cur].mat().rows_block(0, r),
                        dx);
    cur = 1 - cur;
  }
}

template <class T>
void MlpStack<T>::register_zones(profile::Recorder& rec, int model, bool dx0) {
  zones_.clear();
  for (size_t i = 0; i < layers_.size(); ++i)
    zones_.push_back(block_zones(rec, model, "mlp." + std::to_string(i), 1, layers_[i],
                                 /*dx=*/i > 0 || dx0));
  zones_.push_back(block_zones(rec, model, "out", 1, out_));
}

template <class T, class C>
MlpModel<T, C>::MlpModel(Config cfg)
    : Base(cfg),
      stack_(cfg.input_width(), cfg.hidden_size, cfg.num_layers,
             cfg.h * cfg.n_series * cfg.outputs) {}

template <class T, class C>
void MlpModel<T, C>::plan(Planner& planner, Index max_batch) {
  this->set_max_batch(max_batch);
  stack_.plan(planner, max_batch);
  planner.buffer(x_, Region::kActivations, "inputs", {max_batch, cfg_.input_width()});
  if (!cfg_.exog_grads) return;
  const Index l = cfg_.input_size, h = cfg_.h, n = cfg_.n_series, nx = cfg_.hist_exog,
              nf = cfg_.futr_exog, ns = cfg_.stat_exog;
  planner.buffer(dx_, Region::kActivationGrads, "dinputs", {max_batch, cfg_.input_width()});
  if (nx > 0)
    planner.buffer(this->dhist_, Region::kActivationGrads, "dhist_exog", {max_batch * nx, l * n});
  if (nf > 0)
    planner.buffer(this->dfutr_, Region::kActivationGrads, "dfutr_exog",
                   {max_batch * nf, (l + h) * n});
  // Univariate: [B, S] (a row per window) holds the [1, S] sum of shared statics too;
  // multivariate: the panel's [N, S].
  if (ns > 0)
    planner.buffer(this->dstat_, Region::kActivationGrads, "dstat_exog",
                   {Config::kKind.multivariate ? n : max_batch, ns});
}

template <class T, class C>
MatView<T> MlpModel<T, C>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  const Index b = in.batch;
  this->check_inputs(in);
  profile::ZoneChain zone(ctx.profiler, b);
  zone.next(pack_zones_.forward);
  MatView<T> x = batch_rows(x_, b);
  pack_mlp_inputs<T>(cfg_, in, x);
  zone.close();
  MatView<T> y = stack_.forward(ctx, x);
  // [B, H·N·M] is the trainer's [B·H, N·M].
  return MatView<T>(y.data, b * cfg_.h, cfg_.n_series * cfg_.outputs);
}

template <class T, class C>
void MlpModel<T, C>::backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout) {
  const Index b = in.batch;
  const ConstMat<T> dy(dout.data, b, stack_.out());
  if (!cfg_.exog_grads) {
    stack_.backward(ctx, batch_rows(x_, b), dy);
    return;
  }
  // The packed input's gradient, unpacked the way forward packed it (its insample_y columns
  // are computed and dropped: the kernel forms a leading column block only).
  MatView<T> dx = batch_rows(dx_, b);
  stack_.backward(ctx, batch_rows(x_, b), dy, dx);
  profile::ZoneChain zone(ctx.profiler, b);
  zone.next(pack_zones_.backward);
  unpack_mlp_grads<T>(cfg_, in, dx, this->dhist_.view.data, this->dfutr_.view.data,
                      this->dstat_.view.data);
}

template <class T, class C>
void MlpModel<T, C>::register_zones(profile::Recorder& rec, int model) {
  const double d = double(cfg_.input_width());
  const bool dx = cfg_.exog_grads;
  pack_zones_ = cost_zones(
      rec, model, "inputs", 1,
      [&](double rows) { return profile::elementwise(rows, d, 0, 1, sizeof(T)); },
      [&](double rows) {
        return dx ? profile::elementwise(rows, d, 0, 1, sizeof(T)) : profile::Cost{};
      });
  stack_.register_zones(rec, model, dx);
}

// neuralforecast's univariate windows are [B, L, X] and [B, L+H, F]: time-major per window,
// where shoal's are [B, X, L] and [B, F, L+H].
template <class T>
void pack_mlp_inputs(const MlpConfig& c, const ForecastInputs<T>& in, MatView<T> x) {
  const Index l = c.input_size, h = c.h, nx = c.hist_exog, nf = c.futr_exog, ns = c.stat_exog;
  for (Index w = 0; w < in.batch; ++w) {
    T* dst = x.row(w);
    std::copy_n(in.insample_y + w * l, l, dst);
    dst += l;
    const T* hx = nx > 0 ? in.hist_exog + w * nx * l : nullptr;
    for (Index t = 0; t < l; ++t)
      for (Index ch = 0; ch < nx; ++ch) *dst++ = hx[ch * l + t];
    const T* fx = nf > 0 ? in.futr_exog + w * nf * (l + h) : nullptr;
    for (Index t = 0; t < l + h; ++t)
      for (Index ch = 0; ch < nf; ++ch) *dst++ = fx[ch * (l + h) + t];
    if (ns > 0) std::copy_n(in.stat_exog + w * in.stat_window_stride, ns, dst);
  }
}

template <class T>
void unpack_mlp_grads(const MlpConfig& c, const ForecastInputs<T>& in, ConstMat<T> dx, T* dhist,
                      T* dfutr, T* dstat) {
  const Index l = c.input_size, h = c.h, nx = c.hist_exog, nf = c.futr_exog, ns = c.stat_exog;
  if (ns > 0 && in.stat_window_stride == 0) std::fill_n(dstat, ns, T(0));
  for (Index w = 0; w < in.batch; ++w) {
    const T* src = dx.row(w) + l;
    T* hx = nx > 0 ? dhist + w * nx * l : nullptr;
    for (Index t = 0; t < l; ++t)
      for (Index ch = 0; ch < nx; ++ch) hx[ch * l + t] = *src++;
    T* fx = nf > 0 ? dfutr + w * nf * (l + h) : nullptr;
    for (Index t = 0; t < l + h; ++t)
      for (Index ch = 0; ch < nf; ++ch) fx[ch * (l + h) + t] = *src++;
    if (ns == 0) continue;
    if (in.stat_window_stride > 0) {
      std::copy_n(src, ns, dstat + w * ns);
    } else {
      for (Index s = 0; s < ns; ++s) dstat[s] += src[s];
    }
  }
}

template class MlpStack<float>;
template class MlpStack<double>;
template class MlpModel<float, MlpConfig>;
template class MlpModel<double, MlpConfig>;
template class MlpModel<float, MlpMultivariateConfig>;
template class MlpModel<double, MlpMultivariateConfig>;

}  // namespace shoal::models
