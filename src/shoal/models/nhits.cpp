#include "shoal/models/nhits.h"

#include <algorithm>
#include <string_view>

#include "residual_stack_impl.h"
#include "shoal/layers/interpolate1d.h"
#include "shoal/layers/pool1d.h"
#include "shoal/profile/cost.h"

namespace shoal::models {
namespace {

constexpr std::string_view kPooling[] = {"MaxPool1d", "AvgPool1d"};
constexpr std::string_view kInterpolation[] = {"linear", "nearest"};
}  // namespace

// One block: pool → MLP → θ = [backcast | knots] → interpolated forecast. The MLP reads
// [pooled residual (P) | pooled hist (p·X + x) | pooled futr (p·F + f) | stat], neuralforecast's
// concatenation; the exogenous parts are data. θ's knots are M outputs of K each.
template <class T>
struct NHitsBlock {
  Index L, H, K, M, P, Pf, X, F, S;
  layers::Pool1d<T> pool, pool_futr;  // over L and over L + H
  ThetaMLP<T> mlp;
  layers::Interpolate1d<T> interp;
  Buffer<T> r, pooled, theta, fore;  // [B, L], [B, W], [B, L + M·K], [B, H·M]
  Buffer<T> hx, fx;                  // [B·X, P], [B·F, Pf] pooled exogenous, channel-major
  Buffer<T> dtheta, dpooled;         // dpooled [B, P]: the residual's columns only
  Buffer<T> dexog;                   // [B, W − P] the exogenous columns' (exog_grads)

  Index width() const { return P + P * X + Pf * F + S; }  // W

  NHitsBlock(const NHITSConfig& c, Index k_pool, Index freq, size_t index)
      : L(c.input_size),
        H(c.h),
        K(std::max<Index>(c.h / freq, 1)),
        M(c.outputs),
        P((c.input_size + k_pool - 1) / k_pool),
        Pf((c.input_size + c.h + k_pool - 1) / k_pool),
        X(c.hist_exog),
        F(c.futr_exog),
        S(c.stat_exog),
        pool({.length = c.input_size, .kernel_size = k_pool, .mode = mode(c)}),
        pool_futr({.length = c.input_size + c.h, .kernel_size = k_pool, .mode = mode(c)}),
        mlp({.in = width(),
             .mlp_units = c.mlp_units,
             .out = c.input_size + c.outputs * K,
             .activation = parse_block_activation(c.activation),
             .dropout = c.dropout_prob_theta,
             .stream = 0x4e48'0000 + index * 64}),
        interp({.in_size = K,
                .out_size = c.h,
                .mode = c.interpolation_mode == "linear" ? layers::InterpMode::kLinear
                                                         : layers::InterpMode::kNearest}) {}

  static layers::PoolMode mode(const NHITSConfig& c) {
    return c.pooling_mode == "MaxPool1d" ? layers::PoolMode::kMax : layers::PoolMode::kAvg;
  }

  void plan(Planner& planner, Index B, const NHITS<T>& m) {
    pool.plan(planner, B);
    interp.plan(planner, B);
    planner.buffer(r, Region::kActivations, "r", {B, L});
    planner.buffer(pooled, Region::kActivations, "pooled", {B, width()});
    if (X > 0) planner.buffer(hx, Region::kScratch, "hist_pooled", {B * X, P});
    if (F > 0) planner.buffer(fx, Region::kScratch, "futr_pooled", {B * F, Pf});
    planner.buffer(theta, Region::kActivations, "theta", {B, L + M * K});
    planner.buffer(fore, Region::kScratch, "fore", {B, H * M});
    planner.buffer(dtheta, Region::kActivationGrads, "dtheta", {B, L + M * K});
    planner.buffer(dpooled, Region::kActivationGrads, "dpooled", {B, P});
    if (m.config().exog_grads && width() > P)
      planner.buffer(dexog, Region::kScratch, "dexog", {B, width() - P});
  }
  void init(RngStream& rng) { mlp.init(rng); }

  std::pair<ConstMat<T>, ConstMat<T>> forward(const Ctx& ctx, const ForecastInputs<T>& in,
                                              MatView<T> x, const NHITS<T>& m) {
    const Index B = in.batch;
    auto rows = [B](const Buffer<T>& buf) { return buf.mat().rows_block(0, B); };
    MatView<T> p = rows(pooled), th = rows(theta), fc = rows(fore);
    pool.forward(ctx, x, p.cols_block(0, P));
    pool_exog(ctx, in, p);
    mlp.forward(ctx, p, th, in.first_window);
    if (M == 1) {
      interp.forward(ctx, th.cols_block(L, K), fc);
    } else {
      // Each output's knots interpolated on their own, then the [M, H] result laid out
      // step-major, [H, M], as neuralforecast permutes it.
      MatView<T> kq = rows(m.knots_out_);
      for (Index q = 0; q < M; ++q)
        interp.forward(ctx, th.cols_block(L + q * K, K), kq.cols_block(q * H, H));
      for (Index w = 0; w < B; ++w)
        for (Index t = 0; t < H; ++t)
          for (Index q = 0; q < M; ++q) fc(w, t * M + q) = kq(w, q * H + t);
    }
    return {th.cols_block(0, L), fc};
  }

  // dy: dout output-major, [B, M·H] (NHITS::before_backward).
  void backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dy, ConstMat<T> dr,
                MatView<T> dinput, const NHITS<T>& m) {
    const Index B = in.batch;
    auto rows = [B](const Buffer<T>& buf) { return buf.mat().rows_block(0, B); };
    MatView<T> th = rows(theta), dth = rows(dtheta);
    negate_into(dr, dth.cols_block(0, L));
    for (Index q = 0; q < M; ++q)
      interp.backward(ctx, th.cols_block(L + q * K, K), rows(fore), dy.cols_block(q * H, H),
                      dth.cols_block(L + q * K, K));
    // The first block's input is the data: no gradient past its MLP.
    const bool first = dinput.data == nullptr;
    MatView<T> dp = first ? MatView<T>{} : rows(dpooled);
    mlp.backward(ctx, rows(pooled), th, dth, dp, in.first_window);
    if (!first) pool.backward(ctx, rows(r), rows(pooled).cols_block(0, P), dp, dinput);
    if (m.config().exog_grads && width() > P) {
      MatView<T> de = rows(dexog);
      mlp.input_grad_columns(P, de, false);
      add_exog_grads(ctx, in, de, m);
    }
  }

  // Pooling, the MLP, the interpolation of each output's knots (and their reordering when
  // M > 1), the residual update and forecast sum.
  profile::Cost forward_cost(double rows, const NHITS<T>&) const {
    const double e = sizeof(T);
    profile::Cost c = pool.forward_cost(rows) + mlp.forward_cost(rows) +
                      interp.forward_cost(rows * double(M)) +
                      profile::elementwise(rows, double(L), 1, 2, e) +
                      profile::elementwise(rows, double(H * M), 1, 2, e);
    if (M > 1) c += profile::elementwise(rows, double(H * M), 0, 1, e);
    return c;
  }
  profile::Cost backward_cost(double rows, bool dinput, const NHITS<T>& m) const {
    const double e = sizeof(T);
    profile::Cost c = mlp.backward_cost(rows, dinput) + interp.backward_cost(rows * double(M)) +
                      profile::elementwise(rows, double(L), 1, 1, e);
    if (dinput) c += pool.backward_cost(rows) + profile::elementwise(rows, double(L), 1, 2, e);
    if (m.config().exog_grads)
      c += mlp.input_grad_columns_cost(rows, double(width() - P)) +
           pool.backward_cost(rows * double(X)) + pool_futr.backward_cost(rows * double(F)) +
           profile::elementwise(rows, double(width() - P), 1, 2, e);
    return c;
  }

 private:
  // Writes the pooled exogenous inputs into the MLP input x [B, W] after the residual.
  void pool_exog(const Ctx& ctx, const ForecastInputs<T>& in, MatView<T> x) {
    const Index B = in.batch;
    // shoal's windows are channel-major ([B, X, L] is [B·X, L] rows): pool the rows, then lay the
    // pooled steps out time-major as neuralforecast flattens its permuted [B, P, X].
    if (X > 0) {
      MatView<T> hxr = hx.mat().rows_block(0, B * X);
      pool.forward(ctx, ConstMat<T>(in.hist_exog, B * X, L), hxr);
      for (Index w = 0; w < B; ++w)
        for (Index p = 0; p < P; ++p)
          for (Index c = 0; c < X; ++c) x(w, P + p * X + c) = hxr(w * X + c, p);
    }
    if (F > 0) {
      MatView<T> fxr = fx.mat().rows_block(0, B * F);
      pool_futr.forward(ctx, ConstMat<T>(in.futr_exog, B * F, L + H), fxr);
      for (Index w = 0; w < B; ++w)
        for (Index p = 0; p < Pf; ++p)
          for (Index c = 0; c < F; ++c) x(w, P + P * X + p * F + c) = fxr(w * F + c, p);
    }
    for (Index w = 0; w < B; ++w)
      for (Index s = 0; s < S; ++s)
        x(w, P + P * X + Pf * F + s) = in.stat_exog[w * in.stat_window_stride + s];
  }
  // Adds the MLP input gradient's exogenous columns dx [B, W − P], taken back through the
  // poolings, into the model's dhist_, dfutr_ and dstat_.
  void add_exog_grads(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dx,
                      const NHITS<T>& m) {
    const Index B = in.batch;
    auto add = [](const Buffer<T>& from, const Buffer<T>& to, Index n) {
      for (Index i = 0; i < n; ++i) to.view.data[i] += from.view.data[i];
    };
    // pool_exog in reverse: the time-major pooled columns back to channel-major rows (the pooled
    // buffers are free: Pool1d's backward recomputes its argmax from the input), then unpooled.
    if (X > 0) {
      MatView<T> hxr = hx.mat().rows_block(0, B * X);
      for (Index w = 0; w < B; ++w)
        for (Index p = 0; p < P; ++p)
          for (Index c = 0; c < X; ++c) hxr(w * X + c, p) = dx(w, p * X + c);
      pool.backward(ctx, ConstMat<T>(in.hist_exog, B * X, L), hxr, hxr,
                    m.dhist_block_.mat().rows_block(0, B * X));
      add(m.dhist_block_, m.dhist_, B * X * L);
    }
    if (F > 0) {
      MatView<T> fxr = fx.mat().rows_block(0, B * F);
      for (Index w = 0; w < B; ++w)
        for (Index p = 0; p < Pf; ++p)
          for (Index c = 0; c < F; ++c) fxr(w * F + c, p) = dx(w, P * X + p * F + c);
      pool_futr.backward(ctx, ConstMat<T>(in.futr_exog, B * F, L + H), fxr, fxr,
                         m.dfutr_block_.mat().rows_block(0, B * F));
      add(m.dfutr_block_, m.dfutr_, B * F * (L + H));
    }
    for (Index w = 0; w < B; ++w)
      for (Index s = 0; s < S; ++s)
        m.dstat_.view.data[(in.stat_window_stride > 0 ? w * S : 0) + s] +=
            dx(w, P * X + Pf * F + s);
  }
};

void NHITSConfig::visit(OptionVisitor& v) {
  visit_stacks(v, "Stack types, one per stack (NHITS: identity)");
  v("n_pool_kernel_size", n_pool_kernel_size, "Input pooling kernel per stack");
  v("n_freq_downsample", n_freq_downsample, "Forecast knots: h / n_freq_downsample per stack");
  v.choice("pooling_mode", pooling_mode, kPooling, "Input pooling");
  v.choice("interpolation_mode", interpolation_mode, kInterpolation, "Forecast interpolation");
  visit_theta(v, "Dropout after each hidden activation");
}

void NHITSConfig::validate_options() const {
  static constexpr std::string_view kStacks[] = {"identity"};
  validate_stacks("nhits", kStacks, h);
  const size_t s = stack_types.size();
  SHOAL_CHECK(n_pool_kernel_size.size() == s && n_freq_downsample.size() == s,
              "nhits: n_pool_kernel_size and n_freq_downsample need one value per stack ({}), "
              "got {} and {}",
              s, n_pool_kernel_size.size(), n_freq_downsample.size());
  for (size_t i = 0; i < s; ++i) {
    if (n_pool_kernel_size[i] < 1)
      option_out_of_range("n_pool_kernel_size", "integers ≥ 1", double(n_pool_kernel_size[i]));
    if (n_freq_downsample[i] < 1)
      option_out_of_range("n_freq_downsample", "integers ≥ 1", double(n_freq_downsample[i]));
  }
}

template <class T>
NHITS<T>::NHITS(NHITSConfig cfg) : Base(std::move(cfg)) {
  const NHITSConfig& c = this->cfg_;
  this->add_blocks(false, [&](size_t s, size_t index) {
    return std::make_unique<NHitsBlock<T>>(c, c.n_pool_kernel_size[s], c.n_freq_downsample[s],
                                           index);
  });
}

template <class T>
void NHITS<T>::plan_inputs(Planner& planner, Index max_batch) {
  const NHITSConfig& c = this->cfg_;
  const Index B = max_batch, L = c.input_size, HM = c.h * c.outputs;
  if (c.outputs > 1) {
    planner.buffer(knots_out_, Region::kScratch, "knots_out", {B, HM});
    planner.buffer(dyq_, Region::kActivationGrads, "dyq", {B, HM});
  }
  if (!c.exog_grads) return;
  const Index X = c.hist_exog, F = c.futr_exog, S = c.stat_exog, LH = L + c.h;
  if (X > 0) {
    planner.buffer(this->dhist_, Region::kActivationGrads, "dhist_exog", {B * X, L});
    planner.buffer(dhist_block_, Region::kScratch, "dhist_block", {B * X, L});
  }
  if (F > 0) {
    planner.buffer(this->dfutr_, Region::kActivationGrads, "dfutr_exog", {B * F, LH});
    planner.buffer(dfutr_block_, Region::kScratch, "dfutr_block", {B * F, LH});
  }
  if (S > 0) planner.buffer(this->dstat_, Region::kActivationGrads, "dstat_exog", {B, S});
}

template <class T>
ConstMat<T> NHITS<T>::before_backward(const ForecastInputs<T>& in, ConstMat<T> dout) {
  const NHITSConfig& c = this->cfg_;
  const Index B = in.batch, L = c.input_size, H = c.h, M = c.outputs;
  // dout [B, H·M] output-major, [B, M·H], once for every block: output q's rows are then the
  // column block q·H of it (with M = 1, dout itself).
  ConstMat<T> dy(dout.data, B, H);
  if (M > 1) {
    MatView<T> dq = this->batch_rows(dyq_, B);
    for (Index w = 0; w < B; ++w)
      for (Index t = 0; t < H; ++t)
        for (Index q = 0; q < M; ++q) dq(w, q * H + t) = dout.data[(w * H + t) * M + q];
    dy = dq;
  }
  if (c.exog_grads) {
    // Written as sums over the blocks.
    const Index S = c.stat_exog;
    std::fill_n(this->dhist_.view.data, B * c.hist_exog * L, T(0));
    std::fill_n(this->dfutr_.view.data, B * c.futr_exog * (L + H), T(0));
    std::fill_n(this->dstat_.view.data, in.stat_window_stride > 0 ? B * S : S, T(0));
  }
  return dy;
}

template class ResidualStackModel<NHITS<float>, float, NHITSConfig, NHitsBlock<float>>;
template class ResidualStackModel<NHITS<double>, double, NHITSConfig, NHitsBlock<double>>;
template class NHITS<float>;
template class NHITS<double>;

}  // namespace shoal::models
