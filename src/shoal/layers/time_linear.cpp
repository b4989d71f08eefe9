#include "shoal/layers/time_linear.h"

#include "shoal/kernels/elementwise.h"
#include "shoal/kernels/gemm.h"
#include "shoal/kernels/reduce.h"
#include "shoal/kernels/time_linear.h"
#include "shoal/layers/init.h"

namespace shoal::layers {
namespace {

using kernels::Act;
using kernels::Trans;

}  // namespace

template <class T>
void TimeLinear<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.in > 0 && cfg.out > 0 && cfg.cols > 0,
              "TimeLinear needs in, out, cols > 0, got {} {} {}", cfg.in, cfg.out, cfg.cols);
  SHOAL_CHECK(cfg.act == Act::kNone || cfg.act == Act::kRelu, "TimeLinear supports none/relu");
  SHOAL_CHECK(max_rows > 0 && max_rows % cfg.in == 0,
              "TimeLinear max_rows must be a positive multiple of in = {}, got {}", cfg.in,
              max_rows);
  const Index max_batch = max_rows / cfg.in;
  planner.param(weight, "weight", {cfg.out, cfg.in});
  planner.param(bias, "bias", {cfg.out});
  planner.buffer(dz, Region::kScratch, "dz", {max_batch * cfg.out, cfg.cols});
  planner.buffer(wt, Region::kScratch, "wt", {cfg.in * cfg.out + cfg.out * cfg.in * 8});
}

template <class T>
void TimeLinear<T>::init(RngStream& rng) {
  layers::fill_uniform(weight.value, layers::kaiming_uniform_bound(cfg.in), rng);
  layers::fill_uniform(bias.value, layers::linear_bias_bound(cfg.in), rng);
}

template <class T>
void TimeLinear<T>::forward(const Ctx&, ConstMat<T> x, MatView<T> y) {
  const Index ni = cfg.in, no = cfg.out, c = cfg.cols, batch = x.rows / ni;
  SHOAL_DCHECK(x.rows == batch * ni && y.rows == batch * no && x.cols == c && y.cols == c);
  const T* w = weight.value.data;
  const T* bs = bias.value.data;
  const bool relu = cfg.act == Act::kRelu;
  for (Index b = 0; b < batch; ++b) {
    T* yb = y.row(b * no);
    kernels::gemm<T>(Trans::kNo, Trans::kNo, no, c, ni, T(1), w, ni, x.row(b * ni), x.ld, T(0), yb,
                     y.ld);
    for (Index o = 0; o < no; ++o) {
      T* yr = yb + o * y.ld;
      const T bo = bs[o];
      if (relu)
        for (Index j = 0; j < c; ++j) yr[j] = std::max(yr[j] + bo, T(0));
      else
        for (Index j = 0; j < c; ++j) yr[j] += bo;
    }
  }
}

template <class T>
void TimeLinear<T>::backward(const Ctx&, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy,
                             MatView<T> dx, bool accumulate_dx) {
  const Index ni = cfg.in, no = cfg.out, c = cfg.cols, batch = x.rows / ni;
  SHOAL_DCHECK(dy.rows == batch * no && dy.cols == c && x.rows == batch * ni);
  T* db = bias.grad.data;
  ConstMat<T> g = dy;
  if (cfg.act == Act::kRelu) {
    MatView<T> z = dz.mat().rows_block(0, batch * no);
    for (Index r = 0; r < batch * no; ++r) kernels::relu_mask<T>(c, y.row(r), dy.row(r), z.row(r));
    g = z;
  }
  // Wᵀ [I, O] once, so every window's dx_b = Wᵀ·g_b is a plain NN product.
  T* w_t = wt.view.data;
  const T* w = weight.value.data;
  for (Index o = 0; o < no; ++o)
    for (Index i = 0; i < ni; ++i) w_t[i * no + o] = w[o * ni + i];
  kernels::time_weight_grad<T>(no, ni, c, batch, g.data, g.ld, x.data, x.ld, weight.grad.data,
                               w_t + ni * no);
  for (Index b = 0; b < batch; ++b) {
    const T* gb = g.row(b * no);
    for (Index o = 0; o < no; ++o) {
      const T* gr = gb + o * g.ld;
      db[o] += static_cast<T>(kernels::sum_lanes<T>(c, gr));
    }
    // dx_b (+)= Wᵀ · g_b   [I, O]·[O, C]
    if (dx.data != nullptr)
      kernels::gemm<T>(Trans::kNo, Trans::kNo, ni, c, no, T(1), w_t, no, gb, g.ld,
                       accumulate_dx ? T(1) : T(0), dx.row(b * ni), dx.ld);
  }
}

template <class T>
profile::Cost TimeLinear<T>::forward_cost(double rows) const {
  const double columns = rows / double(cfg.in) * double(cfg.cols);
  return profile::linear_forward(
      columns, double(cfg.in), double(cfg.out), true,
      cfg.act == Act::kRelu ? profile::ActKind::kRelu : profile::ActKind::kNone, sizeof(T));
}

template <class T>
profile::Cost TimeLinear<T>::backward_cost(double rows, bool dx) const {
  const double columns = rows / double(cfg.in) * double(cfg.cols);
  profile::Cost c =
      profile::linear_backward_dw(columns, double(cfg.in), double(cfg.out), true, sizeof(T));
  if (dx)
    c += profile::linear_backward_dx(
        columns, double(cfg.in), double(cfg.out),
        cfg.act == Act::kRelu ? profile::ActKind::kRelu : profile::ActKind::kNone, sizeof(T));
  return c;
}

template struct TimeLinear<float>;
template struct TimeLinear<double>;

}  // namespace shoal::layers
