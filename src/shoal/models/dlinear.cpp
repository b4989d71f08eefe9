#include "shoal/models/dlinear.h"

#include "shoal/kernels/elementwise.h"
#include "shoal/kernels/moving_avg.h"
#include "shoal/models/zones.h"
#include "shoal/profile/cost.h"

namespace shoal::models {

template <class T>
void DLinear<T>::Config::validate() const {
  if (moving_avg_window < 1 || moving_avg_window % 2 == 0)
    option_out_of_range("moving_avg_window", "an odd integer ≥ 1", double(moving_avg_window));
  SHOAL_CHECK(outputs >= 1, "dlinear needs outputs ≥ 1, got {}", outputs);
}

template <class T>
void DLinear<T>::Config::set_shape(const WindowShape& s) {
  SHOAL_CHECK(s.hist_exog == 0 && s.futr_exog == 0 && s.stat_exog == 0,
              "dlinear takes no exogenous inputs (got {} hist, {} futr, {} static)", s.hist_exog,
              s.futr_exog, s.stat_exog);
  SHOAL_CHECK(s.n_series == 1,
              "dlinear is a univariate model: fit it one series at a time (--n-series 1, "
              "series \"each\", per_series=True), got {} series in one panel",
              s.n_series);
  h = s.h;
  input_size = s.input_size;
  n_series = 1;
  outputs = s.outputs;
}

template <class T>
DLinear<T>::DLinear(Config cfg)
    : cfg_(cfg),
      trend_({.in = cfg.input_size, .out = cfg.h * cfg.outputs}),
      season_({.in = cfg.input_size, .out = cfg.h * cfg.outputs}) {
  SHOAL_CHECK(cfg_.h > 0 && cfg_.input_size > 0 && cfg_.n_series == 1,
              "DLinear needs h, input_size > 0 and one series, got {} {} {}", cfg_.h,
              cfg_.input_size, cfg_.n_series);
  cfg_.validate();
}

template <class T>
void DLinear<T>::plan(Planner& planner, Index max_batch) {
  SHOAL_CHECK(max_batch > 0, "DLinear max_batch must be > 0, got {}", max_batch);
  max_batch_ = max_batch;
  planner.push_scope("linear_trend.");
  trend_.plan(planner, max_batch);
  planner.pop_scope();
  planner.push_scope("linear_season.");
  season_.plan(planner, max_batch);
  planner.pop_scope();
  planner.buffer(xt_, Region::kActivations, "decomp.trend", {max_batch, cfg_.input_size});
  planner.buffer(xs_, Region::kActivations, "decomp.season", {max_batch, cfg_.input_size});
  const Index hm = cfg_.h * cfg_.outputs;
  planner.buffer(yt_, Region::kActivations, "linear_trend.y", {max_batch, hm});
  planner.buffer(out_, Region::kActivations, "out", {max_batch, hm});
}

template <class T>
void DLinear<T>::init(RngStream& rng) {
  trend_.init(rng);
  season_.init(rng);
}

template <class T>
MatView<T> DLinear<T>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  const Index b = in.batch, l = cfg_.input_size, h = cfg_.h, m = cfg_.outputs;
  SHOAL_CHECK(b > 0 && b <= max_batch_, "DLinear: batch {} outside [1, {}]", b, max_batch_);
  profile::ZoneChain zone(ctx.profiler, b);
  MatView<T> xt = xt_.mat().rows_block(0, b), xs = xs_.mat().rows_block(0, b);
  MatView<T> yt = yt_.mat().rows_block(0, b), y = out_.mat().rows_block(0, b);
  zone.next(decomp_zones_.forward);
  kernels::series_decomp<T>(ConstMat<T>(in.insample_y, b, l), cfg_.moving_avg_window, xt, xs);
  zone.next(trend_zones_.forward);
  trend_.forward(ctx, xt, yt);
  zone.next(season_zones_.forward);
  season_.forward(ctx, xs, y);
  // forecast = trend_part + seasonal_part: the sum counts as the season zone's epilogue.
  kernels::add<T>(b * h * m, y.data, yt.data, y.data);
  // [B, H·M] is the trainer's [B·H, N·M] with N = 1.
  return MatView<T>(y.data, b * h, m);
}

template <class T>
void DLinear<T>::backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout) {
  const Index b = in.batch;
  profile::ZoneChain zone(ctx.profiler, b);
  // Both maps see dŷ as is; the decomposition's inputs are data.
  const ConstMat<T> dy(dout.data, b, cfg_.h * cfg_.outputs);
  zone.next(season_zones_.backward);
  season_.backward(ctx, xs_.mat().rows_block(0, b), out_.mat().rows_block(0, b), dy, MatView<T>{});
  zone.next(trend_zones_.backward);
  trend_.backward(ctx, xt_.mat().rows_block(0, b), yt_.mat().rows_block(0, b), dy, MatView<T>{});
}

template <class T>
void DLinear<T>::register_zones(profile::Recorder& rec, int model) {
  const double e = sizeof(T), h = double(cfg_.h * cfg_.outputs), l = double(cfg_.input_size),
               k = double(cfg_.moving_avg_window);
  decomp_zones_ = cost_zones(
      rec, model, "decomp", 1, [&](double rows) { return profile::series_decomp(rows, l, k, e); },
      [&](double) { return profile::Cost{}; });
  trend_zones_ = cost_zones(
      rec, model, "linear_trend", 1, [&](double rows) { return trend_.forward_cost(rows); },
      [&](double rows) { return trend_.backward_cost(rows, /*dx=*/false); });
  season_zones_ = cost_zones(
      rec, model, "linear_season", 1,
      [&](double rows) {
        return season_.forward_cost(rows) + profile::elementwise(rows, h, 1, 2, e);
      },
      [&](double rows) { return season_.backward_cost(rows, /*dx=*/false); });
}

template class DLinear<float>;
template class DLinear<double>;

}  // namespace shoal::models
