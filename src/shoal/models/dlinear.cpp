#include "shoal/models/dlinear.h"

#include "shoal/kernels/elementwise.h"
#include "shoal/kernels/moving_avg.h"
#include "shoal/models/zones.h"
#include "shoal/profile/cost.h"

namespace shoal::models {

void DLinearConfig::validate_options() const {
  if (moving_avg_window < 1 || moving_avg_window % 2 == 0)
    option_out_of_range("moving_avg_window", "an odd integer ≥ 1", double(moving_avg_window));
}

template <class T>
DLinear<T>::DLinear(Config cfg)
    : ForecastModel(cfg),
      trend_({.in = cfg.input_size, .out = cfg.h * cfg.outputs}),
      season_({.in = cfg.input_size, .out = cfg.h * cfg.outputs}) {}

template <class T>
void DLinear<T>::plan(Planner& planner, Index max_batch) {
  set_max_batch(max_batch);
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
MatView<T> DLinear<T>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  const Index b = in.batch, l = cfg_.input_size, h = cfg_.h, m = cfg_.outputs;
  check_inputs(in);
  profile::ZoneChain zone(ctx.profiler, b);
  MatView<T> xt = batch_rows(xt_, b), xs = batch_rows(xs_, b), yt = batch_rows(yt_, b),
             y = batch_rows(out_, b);
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
  season_.backward(ctx, batch_rows(xs_, b), batch_rows(out_, b), dy, MatView<T>{});
  zone.next(trend_zones_.backward);
  trend_.backward(ctx, batch_rows(xt_, b), batch_rows(yt_, b), dy, MatView<T>{});
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
