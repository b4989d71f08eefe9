#include "shoal/models/bitcn.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "shoal/kernels/elementwise.h"
#include "shoal/kernels/gemm.h"
#include "shoal/models/zones.h"
#include "time_major.h"

namespace shoal::models {

namespace {

// Dropout streams: lin_hist's, lin_futr's, the temporal one's, then each stack's cells.
constexpr uint64_t kStream = 0xB17C'0000;

using kernels::Trans;

// y [rows, n] (+)= W [rows, k] · x [k, n] + b (b per row), the Linears along time.
template <class T>
void time_linear(Index rows, Index n, Index k, const T* w, const T* b, const T* x, T* y) {
  kernels::gemm<T>(Trans::kNo, Trans::kNo, rows, n, k, T(1), w, k, x, n, T(0), y, n);
  for (Index r = 0; r < rows; ++r)
    for (Index i = 0; i < n; ++i) y[r * n + i] += b[r];
}

// From dy [rows, n]: dW [rows, k] += dy · xᵀ, db += Σ dy per row, dx [k, n] = Wᵀ · dy.
template <class T>
void time_linear_back(Index rows, Index n, Index k, const T* w, const T* x, const T* dy, T* dw,
                      T* db, T* dx) {
  kernels::gemm<T>(Trans::kNo, Trans::kYes, rows, k, n, T(1), dy, n, x, n, T(1), dw, k);
  for (Index r = 0; r < rows; ++r) {
    T s = 0;
    for (Index i = 0; i < n; ++i) s += dy[r * n + i];
    db[r] += s;
  }
  kernels::gemm<T>(Trans::kYes, Trans::kNo, k, n, rows, T(1), w, k, dy, n, T(0), dx, n);
}

}  // namespace

void BiTCNConfig::visit(OptionVisitor& v) {
  v("hidden_size", hidden_size, "Channels of the TCN cells and width of the temporal layer");
  v("dropout", dropout, "Dropout after every dense layer and inside every TCN cell");
}

void BiTCNConfig::validate_options() const {
  if (hidden_size < 1) option_out_of_range("hidden_size", "an integer ≥ 1", double(hidden_size));
  if (!(dropout >= 0 && dropout < 1))
    option_out_of_range("dropout", "a probability in [0, 1)", dropout);
  // neuralforecast builds no backward cell for one input step, and its forward then fails.
  // (0: the shape is not set yet.)
  if (input_size == 1) option_out_of_range("input_size", "an integer ≥ 2", double(input_size));
}

template <class T>
Index BiTCN<T>::cells_for(Index steps) {
  // ⌈log2(steps)⌉ exactly in integers (kernel size 2: (steps − 1)/(K − 1) + 1 = steps).
  Index n = 0;
  while ((Index{1} << n) < steps) ++n;
  return n;
}

template <class T>
BiTCN<T>::BiTCN(Config c)
    : ForecastModel(c),
      futr_(c.futr_exog > 0),
      lin_hist_({.in = 1 + c.hist_exog + c.stat_exog + c.futr_exog, .out = c.hidden_size}),
      drop_hist_({.p = c.dropout, .stream = kStream}),
      net_bwd_({.channels = c.hidden_size,
                .kernel = 2,
                .cells = cells_for(c.input_size),
                .dir = layers::ConvDir::kCausal,
                .dropout = c.dropout,
                .stream = kStream + 0x100,
                .steps = c.input_size}),
      drop_futr_({.p = c.dropout, .stream = kStream + 1}),
      temporal1_({.in = c.input_size, .out = c.hidden_size}),
      temporal2_({.in = c.hidden_size, .out = c.h}),
      drop_temporal_({.p = c.dropout, .stream = kStream + 2}),
      output_({.in = (c.futr_exog > 0 ? 3 : 1) * c.hidden_size, .out = c.outputs}) {
  if (futr_) {
    lin_futr_ = std::make_unique<layers::Linear<T>>(
        typename layers::Linear<T>::Config{.in = c.futr_exog, .out = c.hidden_size});
    net_fwd_ = std::make_unique<layers::TCNCells<T>>(
        typename layers::TCNCells<T>::Config{.channels = c.hidden_size,
                                             .kernel = 2,
                                             .cells = cells_for(c.input_size + c.h),
                                             .dir = layers::ConvDir::kAnticausal,
                                             .dropout = c.dropout,
                                             .stream = kStream + 0x200,
                                             .steps = c.input_size + c.h});
  }
}

template <class T>
void BiTCN<T>::plan(Planner& planner, Index max_batch) {
  set_max_batch(max_batch);
  const Index B = max_batch, L = cfg_.input_size, H = cfg_.h, hd = hidden(), C = channels(),
              F = cfg_.futr_exog, M = cfg_.outputs;
  plan_layer(planner, "lin_hist.", lin_hist_, L * B);
  drop_hist_.plan(planner, L * B);
  plan_layer(planner, "net_bwd.", net_bwd_, L * B);
  if (futr_) {
    plan_layer(planner, "lin_futr.", *lin_futr_, (L + H) * B);
    drop_futr_.plan(planner, (L + H) * B);
    plan_layer(planner, "net_fwd.", *net_fwd_, (L + H) * B);
  }
  // The temporal Linears' products run along time (forward), not through Linear.
  plan_layer(planner, "temporal_lin1.", temporal1_, 1);
  plan_layer(planner, "temporal_lin2.", temporal2_, 1);
  drop_temporal_.plan(planner, hd * B);
  plan_layer(planner, "output_lin.", output_, H * B);
  planner.buffer(x_, Region::kActivations, "x", {L * B, lin_hist_.cfg.in});
  planner.buffer(e_, Region::kActivations, "e", {L * B, hd});
  planner.buffer(de_, Region::kActivationGrads, "de", {L * B, hd});
  planner.buffer(s_, Region::kActivations, "s", {L * B, hd});
  planner.buffer(ds_, Region::kActivationGrads, "ds", {L * B, hd});
  if (futr_) {
    planner.buffer(fx_, Region::kActivations, "fx", {(L + H) * B, F});
    planner.buffer(ef_, Region::kActivations, "ef", {(L + H) * B, hd});
    planner.buffer(def_, Region::kActivationGrads, "def", {(L + H) * B, hd});
    planner.buffer(sf_, Region::kActivations, "sf", {(L + H) * B, hd});
    planner.buffer(dsf_, Region::kActivationGrads, "dsf", {(L + H) * B, hd});
    planner.buffer(c_, Region::kActivations, "c", {L * B, C});
    planner.buffer(dc_, Region::kActivationGrads, "dc", {L * B, C});
    planner.buffer(d_, Region::kActivations, "d", {H * B, out_in()});
    planner.buffer(dd_, Region::kActivationGrads, "dd", {H * B, out_in()});
  }
  planner.buffer(p_, Region::kActivations, "p", {hd * B, C});
  planner.buffer(dp_, Region::kActivationGrads, "dp", {hd * B, C});
  planner.buffer(g_, Region::kActivations, "g", {hd * B, C});
  planner.buffer(q_, Region::kActivations, "q", {H * B, C});
  planner.buffer(dq_, Region::kActivationGrads, "dq", {H * B, C});
  planner.buffer(o_, Region::kActivations, "o", {H * B, M});
  planner.buffer(do_, Region::kActivationGrads, "do", {H * B, M});
  planner.buffer(out_, Region::kActivations, "out", {B, H * M});
}

template <class T>
MatView<T> BiTCN<T>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  check_inputs(in);
  const Index B = in.batch, L = cfg_.input_size, H = cfg_.h, hd = hidden(), C = channels(),
              X = cfg_.hist_exog, S = cfg_.stat_exog, F = cfg_.futr_exog, M = cfg_.outputs;
  profile::ZoneChain zone(ctx.profiler, B);
  zone.next(zbwd_.forward);
  // lin_hist's input, time-major, neuralforecast's column order [y | hist | stat | futr].
  MatView<T> x = x_.mat().rows_block(0, L * B);
  time_major::encoder_input(in, L, H, X, S, F, x);
  MatView<T> e = e_.mat().rows_block(0, L * B);
  lin_hist_.forward(ctx, x, e);
  const Index w0 = in.first_window;
  layers::dropout_time_major<T>(drop_hist_, ctx, e, L, w0, false);
  MatView<T> s = s_.mat().rows_block(0, L * B);
  net_bwd_.forward(ctx, e, s, w0);
  const T* cat = s.data;  // [L, B·C]
  if (futr_) {
    zone.next(zfwd_.forward);
    MatView<T> fx = fx_.mat().rows_block(0, (L + H) * B);
    for (Index t = 0; t < L + H; ++t)
      for (Index w = 0; w < B; ++w)
        for (Index c = 0; c < F; ++c)
          fx.row(t * B + w)[c] = in.futr_exog[(w * F + c) * (L + H) + t];
    MatView<T> ef = ef_.mat().rows_block(0, (L + H) * B);
    lin_futr_->forward(ctx, fx, ef);
    layers::dropout_time_major<T>(drop_futr_, ctx, ef, L + H, w0, false);
    MatView<T> sf = sf_.mat().rows_block(0, (L + H) * B);
    net_fwd_->forward(ctx, ef, sf, w0);
    MatView<T> c = c_.mat().rows_block(0, L * B);
    for (Index r = 0; r < L * B; ++r) {
      std::copy_n(s.row(r), hd, c.row(r));
      std::copy_n(sf.row(r), hd, c.row(r) + hd);
    }
    cat = c.data;
  }
  // Along time: p [Hd, B·C] = W1 [Hd, L] · c [L, B·C] + b1, GELU, dropout; q [H, B·C].
  zone.next(ztemp_.forward);
  T* p = p_.view.data;
  T* g = g_.view.data;
  time_linear<T>(hd, B * C, L, temporal1_.p.weight.value.data, temporal1_.p.bias.value.data, cat,
                 p);
  kernels::gelu_forward<T>(hd * B * C, p, g);
  layers::dropout_time_major<T>(drop_temporal_, ctx, MatView<T>(g, hd * B, C), hd, w0, false);
  T* q = q_.view.data;
  time_linear<T>(H, B * C, hd, temporal2_.p.weight.value.data, temporal2_.p.bias.value.data, g, q);
  zone.next(zout_.forward);
  ConstMat<T> dec(q, H * B, C);
  if (futr_) {
    MatView<T> d = d_.mat().rows_block(0, H * B);
    const T* sf = sf_.view.data;
    for (Index r = 0; r < H * B; ++r) {
      std::copy_n(q + r * C, C, d.row(r));
      std::copy_n(sf + (L * B + r) * hd, hd, d.row(r) + C);
    }
    dec = d;
  }
  MatView<T> o = o_.mat().rows_block(0, H * B);
  output_.forward(ctx, dec, o);
  // Time-major [H·B, M] to the trainer's [B·H, M].
  MatView<T> out = out_.mat().rows_block(0, B);
  time_major::to_windows<T>(o, B, H, M, out);
  return MatView<T>(out.data, B * H, M);
}

template <class T>
void BiTCN<T>::backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout) {
  const Index B = in.batch, L = cfg_.input_size, H = cfg_.h, hd = hidden(), C = channels(),
              M = cfg_.outputs;
  profile::ZoneChain zone(ctx.profiler, B);
  zone.next(zout_.backward);
  MatView<T> dot = do_.mat().rows_block(0, H * B);
  time_major::to_steps<T>(dout, B, H, M, dot);
  T* dq = dq_.view.data;
  MatView<T> dsf;
  if (futr_) {
    dsf = dsf_.mat().rows_block(0, (L + H) * B);
    MatView<T> dd = dd_.mat().rows_block(0, H * B);
    output_.backward(ctx, d_.mat().rows_block(0, H * B), o_.mat().rows_block(0, H * B), dot, dd);
    for (Index r = 0; r < H * B; ++r) {
      std::copy_n(dd.row(r), C, dq + r * C);
      std::copy_n(dd.row(r) + C, hd, dsf.row(L * B + r));
    }
  } else {
    output_.backward(ctx, q_.mat().rows_block(0, H * B), o_.mat().rows_block(0, H * B), dot,
                     MatView<T>(dq, H * B, C));
  }
  zone.next(ztemp_.backward);
  T* dp = dp_.view.data;
  time_linear_back<T>(H, B * C, hd, temporal2_.p.weight.value.data, g_.view.data, dq,
                      temporal2_.p.weight.grad.data, temporal2_.p.bias.grad.data, dp);
  const Index w0 = in.first_window;
  layers::dropout_time_major<T>(drop_temporal_, ctx, MatView<T>(dp, hd * B, C), hd, w0, true);
  kernels::gelu_backward<T>(hd * B * C, p_.view.data, dp, dp);
  MatView<T> ds = ds_.mat().rows_block(0, L * B);
  T* dcat = futr_ ? dc_.view.data : ds.data;
  time_linear_back<T>(hd, B * C, L, temporal1_.p.weight.value.data,
                      futr_ ? c_.view.data : s_.view.data, dp, temporal1_.p.weight.grad.data,
                      temporal1_.p.bias.grad.data, dcat);
  if (futr_) {
    for (Index r = 0; r < L * B; ++r) {
      std::copy_n(dcat + r * C, hd, ds.row(r));
      std::copy_n(dcat + r * C + hd, hd, dsf.row(r));
    }
    zone.next(zfwd_.backward);
    MatView<T> ef = ef_.mat().rows_block(0, (L + H) * B);
    MatView<T> def = def_.mat().rows_block(0, (L + H) * B);
    net_fwd_->backward(ctx, ef, dsf, def, w0);
    layers::dropout_time_major<T>(drop_futr_, ctx, def, L + H, w0, true);
    lin_futr_->backward(ctx, fx_.mat().rows_block(0, (L + H) * B), ef, def, MatView<T>{});
  }
  zone.next(zbwd_.backward);
  MatView<T> e = e_.mat().rows_block(0, L * B);
  MatView<T> de = de_.mat().rows_block(0, L * B);
  net_bwd_.backward(ctx, e, ds, de, w0);
  layers::dropout_time_major<T>(drop_hist_, ctx, de, L, w0, true);
  // The input is data: no input gradient.
  lin_hist_.backward(ctx, x_.mat().rows_block(0, L * B), e, de, MatView<T>{});
}

template <class T>
void BiTCN<T>::register_zones(profile::Recorder& rec, int model) {
  const double L = double(cfg_.input_size), H = double(cfg_.h), hd = double(hidden()),
               C = double(channels()), e = sizeof(T);
  zbwd_ = cost_zones(
      rec, model, "net_bwd", L,
      [this](double r) { return lin_hist_.forward_cost(r) + net_bwd_.forward_cost(r); },
      [this](double r) { return lin_hist_.backward_cost(r, false) + net_bwd_.backward_cost(r); });
  if (futr_)
    zfwd_ = cost_zones(
        rec, model, "net_fwd", L + H,
        [this](double r) { return lin_futr_->forward_cost(r) + net_fwd_->forward_cost(r); },
        [this](double r) {
          return lin_futr_->backward_cost(r, false) + net_fwd_->backward_cost(r);
        });
  ztemp_ = cost_zones(
      rec, model, "temporal", C,
      [&](double r) {
        return profile::linear_forward(r, L, hd, true, profile::ActKind::kGelu, e) +
               profile::linear_forward(r, hd, H, true, profile::ActKind::kNone, e);
      },
      [&](double r) {
        return profile::linear_backward_dw(r, L, hd, true, e) +
               profile::linear_backward_dx(r, L, hd, profile::ActKind::kGelu, e) +
               profile::linear_backward_dw(r, hd, H, true, e) +
               profile::linear_backward_dx(r, hd, H, profile::ActKind::kNone, e);
      });
  zout_ = block_zones(rec, model, "output", H, output_);
}

template class BiTCN<float>;
template class BiTCN<double>;

}  // namespace shoal::models
