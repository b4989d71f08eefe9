#include "shoal/layers/linear.h"

#include "shoal/layers/init.h"

namespace shoal::layers {

template <class T>
void Linear<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.in > 0 && cfg.out > 0, "Linear needs in > 0 and out > 0, got in={} out={}",
              cfg.in, cfg.out);
  if (cfg.pointwise_conv)
    planner.param(p.weight, "weight", {cfg.out, cfg.in, 1});
  else
    planner.param(p.weight, "weight", {cfg.out, cfg.in});
  if (cfg.bias) planner.param(p.bias, "bias", {cfg.out});
  if (cfg.act == Act::kGelu) planner.buffer(pre, Region::kActivations, "pre", {max_rows, cfg.out});
  planner.buffer(dz, Region::kScratch, "dz", {max_rows, cfg.out});
}

template <class T>
void Linear<T>::init(RngStream& rng) {
  fill_uniform(p.weight.value, kaiming_uniform_bound(cfg.in), rng);
  if (cfg.bias) fill_uniform(p.bias.value, linear_bias_bound(cfg.in), rng);
}

template <class T>
void Linear<T>::forward(const Ctx&, ConstMat<T> x, MatView<T> y) {
  SHOAL_DCHECK(x.cols == cfg.in && y.cols == cfg.out && x.rows == y.rows);
  MatView<T> pre_rows = cfg.act == Act::kGelu ? pre.mat().rows_block(0, x.rows) : MatView<T>{};
  kernels::linear_forward<T>(x, p.weight.value.mat(), cfg.bias ? p.bias.value.data : nullptr,
                             cfg.act, y, pre_rows);
}

template <class T>
void Linear<T>::backward(const Ctx&, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy, MatView<T> dx) {
  SHOAL_DCHECK(dy.rows == x.rows && dy.cols == cfg.out);
  ConstMat<T> saved = cfg.act == Act::kGelu ? ConstMat<T>(pre.mat().rows_block(0, x.rows)) : y;
  kernels::linear_backward<T>(x, p.weight.value.mat(), saved, cfg.act, dy,
                              dz.mat().rows_block(0, x.rows), dx, p.weight.grad.mat(),
                              cfg.bias ? p.bias.grad.data : nullptr, /*accumulate=*/true);
}

template struct Linear<float>;
template struct Linear<double>;

}  // namespace shoal::layers
