#include "shoal/models/nlinear.h"

#include "shoal/models/zones.h"
#include "shoal/profile/cost.h"

namespace shoal::models {

template <class T>
NLinear<T>::NLinear(Config cfg)
    : ForecastModel(cfg), linear_({.in = cfg.input_size, .out = cfg.h * cfg.outputs}) {}

template <class T>
void NLinear<T>::plan(Planner& planner, Index max_batch) {
  planner.push_scope("linear.");
  linear_.plan(planner, max_batch);
  planner.pop_scope();
  planner.buffer(x_, Region::kActivations, "x", {max_batch, cfg_.input_size});
  planner.buffer(out_, Region::kActivations, "out", {max_batch, cfg_.h * cfg_.outputs});
}

template <class T>
MatView<T> NLinear<T>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  const Index b = in.batch, l = cfg_.input_size, h = cfg_.h * cfg_.outputs;
  profile::ZoneChain zone(ctx.profiler, b);
  zone.next(zones_.forward);
  MatView<T> x = batch_rows(x_, b), y = batch_rows(out_, b);
  for (Index w = 0; w < b; ++w) {
    const T* src = in.insample_y + w * l;
    const T last = src[l - 1];
    T* dst = x.row(w);
    for (Index t = 0; t < l; ++t) dst[t] = src[t] - last;
  }
  linear_.forward(ctx, x, y);
  for (Index w = 0; w < b; ++w) {
    const T last = in.insample_y[w * l + l - 1];
    T* row = y.row(w);
    for (Index t = 0; t < h; ++t) row[t] += last;
  }
  // [B, H·M] is the trainer's [B·H, M] (N = 1).
  return MatView<T>(y.data, b * cfg_.h, cfg_.outputs);
}

template <class T>
void NLinear<T>::backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout) {
  const Index b = in.batch;
  profile::ZoneChain zone(ctx.profiler, b);
  zone.next(zones_.backward);
  // The last value's path reaches only the input, which is data: the parameters see dŷ as is.
  linear_.backward(ctx, batch_rows(x_, b), batch_rows(out_, b),
                   ConstMat<T>(dout.data, b, cfg_.h * cfg_.outputs), MatView<T>{});
}

template <class T>
void NLinear<T>::register_zones(profile::Recorder& rec, int model) {
  // One row per window: the Linear's own cost, plus subtracting and adding back the last value.
  const double e = sizeof(T), h = double(cfg_.h * cfg_.outputs), l = double(cfg_.input_size);
  zones_ = cost_zones(
      rec, model, "linear", 1,
      [&](double rows) {
        return profile::elementwise(rows, l, 1, 1, e) + linear_.forward_cost(rows) +
               profile::elementwise(rows, h, 1, 1, e);
      },
      [&](double rows) { return linear_.backward_cost(rows, /*dx=*/false); });
}

template class NLinear<float>;
template class NLinear<double>;

}  // namespace shoal::models
