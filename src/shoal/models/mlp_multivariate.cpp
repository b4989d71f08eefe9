#include "shoal/models/mlp_multivariate.h"

#include <algorithm>

#include "shoal/models/zones.h"
#include "shoal/profile/cost.h"

namespace shoal::models {

template <class T>
MlpMultivariate<T>::MlpMultivariate(Config cfg)
    : cfg_(cfg),
      stack_(cfg.input_width(), cfg.hidden_size, cfg.num_layers,
             cfg.h * cfg.n_series * cfg.outputs) {
  SHOAL_CHECK(cfg_.h > 0 && cfg_.input_size > 0 && cfg_.n_series > 0,
              "MLPMultivariate needs h, input_size and n_series > 0, got {} {} {}", cfg_.h,
              cfg_.input_size, cfg_.n_series);
  cfg_.validate();
}

template <class T>
void MlpMultivariate<T>::plan(Planner& planner, Index max_batch) {
  SHOAL_CHECK(max_batch > 0, "MLPMultivariate max_batch must be > 0, got {}", max_batch);
  max_batch_ = max_batch;
  stack_.plan(planner, max_batch);
  planner.buffer(x_, Region::kActivations, "inputs", {max_batch, cfg_.input_width()});
  if (!cfg_.exog_grads) return;
  const Index l = cfg_.input_size, h = cfg_.h, n = cfg_.n_series;
  planner.buffer(dx_, Region::kActivationGrads, "dinputs", {max_batch, cfg_.input_width()});
  if (cfg_.hist_exog_size > 0)
    planner.buffer(dhist_, Region::kActivationGrads, "dhist_exog",
                   {max_batch, cfg_.hist_exog_size * l * n});
  if (cfg_.futr_exog_size > 0)
    planner.buffer(dfutr_, Region::kActivationGrads, "dfutr_exog",
                   {max_batch, cfg_.futr_exog_size * (l + h) * n});
  if (cfg_.stat_exog_size > 0)
    planner.buffer(dstat_, Region::kActivationGrads, "dstat_exog", {n, cfg_.stat_exog_size});
}

template <class T>
MatView<T> MlpMultivariate<T>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  const Index b = in.batch, l = cfg_.input_size, h = cfg_.h, n = cfg_.n_series;
  const Index ny = l * n, nx = cfg_.hist_exog_size * l * n, nf = cfg_.futr_exog_size * (l + h) * n,
              ns = cfg_.stat_exog_size * n;
  SHOAL_CHECK(b > 0 && b <= max_batch_, "MLPMultivariate: batch {} outside [1, {}]", b, max_batch_);
  SHOAL_CHECK((nx == 0 || in.hist_exog != nullptr) && (nf == 0 || in.futr_exog != nullptr) &&
                  (ns == 0 || in.stat_exog != nullptr),
              "MLPMultivariate: exogenous inputs missing for its config ({} hist, {} futr, {} "
              "static)",
              cfg_.hist_exog_size, cfg_.futr_exog_size, cfg_.stat_exog_size);
  profile::ZoneChain zone(ctx.profiler, b);
  zone.next(pack_zones_.forward);
  MatView<T> x = x_.mat().rows_block(0, b);
  for (Index w = 0; w < b; ++w) {
    T* dst = x.row(w);
    dst = std::copy_n(in.insample_y + w * ny, ny, dst);
    if (nx > 0) dst = std::copy_n(in.hist_exog + w * nx, nx, dst);
    if (nf > 0) dst = std::copy_n(in.futr_exog + w * nf, nf, dst);
    if (ns > 0) std::copy_n(in.stat_exog, ns, dst);
  }
  zone.close();
  MatView<T> y = stack_.forward(ctx, x);
  // [B, H·N·M] is the trainer's [B·H, N·M].
  return MatView<T>(y.data, b * h, n * cfg_.outputs);
}

template <class T>
void MlpMultivariate<T>::backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout) {
  const Index b = in.batch;
  const ConstMat<T> dy(dout.data, b, stack_.out());
  if (!cfg_.exog_grads) {
    stack_.backward(ctx, x_.mat().rows_block(0, b), dy);
    return;
  }
  // The packed input's gradient (its insample_y columns computed and dropped: the kernel forms
  // a leading column block only), read back the way forward packed it.
  MatView<T> dx = dx_.mat().rows_block(0, b);
  stack_.backward(ctx, x_.mat().rows_block(0, b), dy, dx);
  profile::ZoneChain zone(ctx.profiler, b);
  zone.next(pack_zones_.backward);
  const Index l = cfg_.input_size, h = cfg_.h, n = cfg_.n_series;
  const Index ny = l * n, nx = cfg_.hist_exog_size * l * n, nf = cfg_.futr_exog_size * (l + h) * n,
              ns = cfg_.stat_exog_size * n;
  if (ns > 0) std::fill_n(dstat_.view.data, ns, T(0));
  for (Index w = 0; w < b; ++w) {
    const T* src = dx.row(w) + ny;
    if (nx > 0) std::copy_n(src, nx, dhist_.view.data + w * nx);
    src += nx;
    if (nf > 0) std::copy_n(src, nf, dfutr_.view.data + w * nf);
    src += nf;
    for (Index s = 0; s < ns; ++s) dstat_.view.data[s] += src[s];
  }
}

template <class T>
void MlpMultivariate<T>::register_zones(profile::Recorder& rec, int model) {
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

template class MlpMultivariate<float>;
template class MlpMultivariate<double>;

}  // namespace shoal::models
