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
  stack_.backward(ctx, x_.mat().rows_block(0, b), ConstMat<T>(dout.data, b, stack_.out()));
}

template <class T>
void MlpMultivariate<T>::register_zones(profile::Recorder& rec, int model) {
  const double d = double(cfg_.input_width());
  pack_zones_ = cost_zones(
      rec, model, "inputs", 1,
      [&](double rows) { return profile::elementwise(rows, d, 0, 1, sizeof(T)); },
      [&](double) { return profile::Cost{}; });
  stack_.register_zones(rec, model);
}

template class MlpMultivariate<float>;
template class MlpMultivariate<double>;

}  // namespace shoal::models
