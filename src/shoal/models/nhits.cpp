#include "shoal/models/nhits.h"

#include <algorithm>
#include <string_view>

#include "shoal/models/residual_stack.h"
#include "shoal/models/zones.h"
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
};

void NHITSConfig::visit(OptionVisitor& v) {
  v("stack_types", stack_types, "Stack types, one per stack (NHITS: identity)");
  v("n_blocks", n_blocks, "Blocks per stack");
  v("mlp_units", mlp_units, "Hidden layers as flattened [in, out] pairs, e.g. 512,512,512,512");
  v("n_pool_kernel_size", n_pool_kernel_size, "Input pooling kernel per stack");
  v("n_freq_downsample", n_freq_downsample, "Forecast knots: h / n_freq_downsample per stack");
  v.choice("pooling_mode", pooling_mode, kPooling, "Input pooling");
  v.choice("interpolation_mode", interpolation_mode, kInterpolation, "Forecast interpolation");
  v("dropout_prob_theta", dropout_prob_theta, "Dropout after each hidden activation");
  v.choice("activation", activation, kBlockActivations, "Hidden activation");
}

void NHITSConfig::validate_options() const {
  const size_t s = stack_types.size();
  SHOAL_CHECK(s > 0 && n_blocks.size() == s && n_pool_kernel_size.size() == s &&
                  n_freq_downsample.size() == s,
              "nhits: stack_types, n_blocks, n_pool_kernel_size and n_freq_downsample need the "
              "same length, got {}, {}, {}, {}",
              s, n_blocks.size(), n_pool_kernel_size.size(), n_freq_downsample.size());
  for (size_t i = 0; i < s; ++i) {
    SHOAL_CHECK(stack_types[i] == "identity", "nhits: stack type '{}' not found (only 'identity')",
                stack_types[i]);
    if (n_blocks[i] < 0) option_out_of_range("n_blocks", "integers ≥ 0", double(n_blocks[i]));
    if (n_pool_kernel_size[i] < 1)
      option_out_of_range("n_pool_kernel_size", "integers ≥ 1", double(n_pool_kernel_size[i]));
    if (n_freq_downsample[i] < 1)
      option_out_of_range("n_freq_downsample", "integers ≥ 1", double(n_freq_downsample[i]));
  }
  validate_block_options("nhits", mlp_units, dropout_prob_theta, activation);
}

template <class T>
NHITS<T>::NHITS(Config cfg) : Base(std::move(cfg)) {
  for (size_t s = 0; s < cfg_.stack_types.size(); ++s)
    for (int64_t b = 0; b < cfg_.n_blocks[s]; ++b)
      this->add_block(
          std::make_unique<NHitsBlock<T>>(cfg_, cfg_.n_pool_kernel_size[s],
                                          cfg_.n_freq_downsample[s], this->blocks_.size()),
          false);
}

template <class T>
NHITS<T>::~NHITS() = default;

template <class T>
void NHITS<T>::plan(Planner& planner, Index max_batch) {
  const Index B = max_batch, L = cfg_.input_size, HM = cfg_.h * cfg_.outputs;
  this->plan_blocks(
      planner, max_batch,
      [&](size_t, NHitsBlock<T>& b) {
        b.pool.plan(planner, B);
        b.interp.plan(planner, B);
        planner.buffer(b.r, Region::kActivations, "r", {B, L});
        planner.buffer(b.pooled, Region::kActivations, "pooled", {B, b.width()});
        if (b.X > 0) planner.buffer(b.hx, Region::kScratch, "hist_pooled", {B * b.X, b.P});
        if (b.F > 0) planner.buffer(b.fx, Region::kScratch, "futr_pooled", {B * b.F, b.Pf});
        planner.buffer(b.theta, Region::kActivations, "theta", {B, L + b.M * b.K});
        planner.buffer(b.fore, Region::kScratch, "fore", {B, HM});
        planner.buffer(b.dtheta, Region::kActivationGrads, "dtheta", {B, L + b.M * b.K});
        planner.buffer(b.dpooled, Region::kActivationGrads, "dpooled", {B, b.P});
        if (cfg_.exog_grads && b.width() > b.P)
          planner.buffer(b.dexog, Region::kScratch, "dexog", {B, b.width() - b.P});
      },
      [] {});
  if (cfg_.outputs > 1) {
    planner.buffer(knots_out_, Region::kScratch, "knots_out", {B, HM});
    planner.buffer(dyq_, Region::kActivationGrads, "dyq", {B, HM});
  }
  if (!cfg_.exog_grads) return;
  const Index X = cfg_.hist_exog, F = cfg_.futr_exog, S = cfg_.stat_exog, LH = L + cfg_.h;
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
void NHITS<T>::init(RngStream& rng) {
  for (auto& b : this->blocks_) b->mlp.init(rng);
}

template <class T>
void NHITS<T>::pool_exog(const Ctx& ctx, NHitsBlock<T>& b, const ForecastInputs<T>& in,
                         MatView<T> x) {
  const Index B = in.batch, L = cfg_.input_size, H = cfg_.h, P = b.P, Pf = b.Pf, X = b.X, F = b.F;
  // shoal's windows are channel-major ([B, X, L] is [B·X, L] rows): pool the rows, then lay the
  // pooled steps out time-major as neuralforecast flattens its permuted [B, P, X].
  if (X > 0) {
    MatView<T> hx = b.hx.mat().rows_block(0, B * X);
    b.pool.forward(ctx, ConstMat<T>(in.hist_exog, B * X, L), hx);
    for (Index w = 0; w < B; ++w)
      for (Index p = 0; p < P; ++p)
        for (Index c = 0; c < X; ++c) x(w, P + p * X + c) = hx(w * X + c, p);
  }
  if (F > 0) {
    MatView<T> fx = b.fx.mat().rows_block(0, B * F);
    b.pool_futr.forward(ctx, ConstMat<T>(in.futr_exog, B * F, L + H), fx);
    for (Index w = 0; w < B; ++w)
      for (Index p = 0; p < Pf; ++p)
        for (Index c = 0; c < F; ++c) x(w, P + P * X + p * F + c) = fx(w * F + c, p);
  }
  for (Index w = 0; w < B; ++w)
    for (Index s = 0; s < b.S; ++s)
      x(w, P + P * X + Pf * F + s) = in.stat_exog[w * in.stat_window_stride + s];
}

template <class T>
void NHITS<T>::add_exog_grads(const Ctx& ctx, NHitsBlock<T>& b, const ForecastInputs<T>& in,
                              ConstMat<T> dx) {
  const Index B = in.batch, L = cfg_.input_size, H = cfg_.h, P = b.P, Pf = b.Pf, X = b.X, F = b.F;
  auto add = [](const Buffer<T>& from, const Buffer<T>& to, Index n) {
    for (Index i = 0; i < n; ++i) to.view.data[i] += from.view.data[i];
  };
  // pool_exog in reverse: the time-major pooled columns back to channel-major rows (the pooled
  // buffers are free: Pool1d's backward recomputes its argmax from the input), then unpooled.
  if (X > 0) {
    MatView<T> hx = b.hx.mat().rows_block(0, B * X);
    for (Index w = 0; w < B; ++w)
      for (Index p = 0; p < P; ++p)
        for (Index c = 0; c < X; ++c) hx(w * X + c, p) = dx(w, p * X + c);
    b.pool.backward(ctx, ConstMat<T>(in.hist_exog, B * X, L), hx, hx,
                    dhist_block_.mat().rows_block(0, B * X));
    add(dhist_block_, this->dhist_, B * X * L);
  }
  if (F > 0) {
    MatView<T> fx = b.fx.mat().rows_block(0, B * F);
    for (Index w = 0; w < B; ++w)
      for (Index p = 0; p < Pf; ++p)
        for (Index c = 0; c < F; ++c) fx(w * F + c, p) = dx(w, P * X + p * F + c);
    b.pool_futr.backward(ctx, ConstMat<T>(in.futr_exog, B * F, L + H), fx, fx,
                         dfutr_block_.mat().rows_block(0, B * F));
    add(dfutr_block_, this->dfutr_, B * F * (L + H));
  }
  for (Index w = 0; w < B; ++w)
    for (Index s = 0; s < b.S; ++s)
      this->dstat_.view.data[(in.stat_window_stride > 0 ? w * b.S : 0) + s] +=
          dx(w, P * X + Pf * F + s);
}

template <class T>
MatView<T> NHITS<T>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  const Index B = in.batch, L = cfg_.input_size, H = cfg_.h, M = cfg_.outputs;
  auto rows = [B](Buffer<T>& buf) { return batch_rows(buf, B); };
  return this->forward_blocks(ctx, in, [&](size_t, NHitsBlock<T>& b, MatView<T> r) {
    MatView<T> pooled = rows(b.pooled), theta = rows(b.theta), fore = rows(b.fore);
    b.pool.forward(ctx, r, pooled.cols_block(0, b.P));
    pool_exog(ctx, b, in, pooled);
    b.mlp.forward(ctx, pooled, theta, in.first_window);
    if (M == 1) {
      b.interp.forward(ctx, theta.cols_block(L, b.K), fore);
    } else {
      // Each output's knots interpolated on their own, then the [M, H] result laid out
      // step-major, [H, M], as neuralforecast permutes it.
      MatView<T> kq = rows(knots_out_);
      for (Index q = 0; q < M; ++q)
        b.interp.forward(ctx, theta.cols_block(L + q * b.K, b.K), kq.cols_block(q * H, H));
      for (Index w = 0; w < B; ++w)
        for (Index t = 0; t < H; ++t)
          for (Index q = 0; q < M; ++q) fore(w, t * M + q) = kq(w, q * H + t);
    }
    return std::pair(ConstMat<T>(theta.cols_block(0, L)), ConstMat<T>(fore));
  });
}

template <class T>
void NHITS<T>::backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout) {
  const Index B = in.batch, L = cfg_.input_size, H = cfg_.h, M = cfg_.outputs;
  auto rows = [B](Buffer<T>& buf) { return batch_rows(buf, B); };
  // dout [B, H·M] output-major, [B, M·H], once for every block: output q's rows are then the
  // column block q·H of it (with M = 1, dout itself).
  ConstMat<T> dy(dout.data, B, H);
  if (M > 1) {
    MatView<T> dq = rows(dyq_);
    for (Index w = 0; w < B; ++w)
      for (Index t = 0; t < H; ++t)
        for (Index q = 0; q < M; ++q) dq(w, q * H + t) = dout.data[(w * H + t) * M + q];
    dy = dq;
  }
  const bool exog = cfg_.exog_grads;
  if (exog) {
    // Written as sums over the blocks.
    const Index S = cfg_.stat_exog;
    std::fill_n(this->dhist_.view.data, B * cfg_.hist_exog * L, T(0));
    std::fill_n(this->dfutr_.view.data, B * cfg_.futr_exog * (L + H), T(0));
    std::fill_n(this->dstat_.view.data, in.stat_window_stride > 0 ? B * S : S, T(0));
  }
  this->backward_blocks(ctx, in, [&](size_t i, NHitsBlock<T>& b, ConstMat<T> dr, MatView<T> dr_in) {
    MatView<T> theta = rows(b.theta), dtheta = rows(b.dtheta);
    this->negate_into(dr, dtheta.cols_block(0, L));
    for (Index q = 0; q < M; ++q)
      b.interp.backward(ctx, theta.cols_block(L + q * b.K, b.K), rows(b.fore),
                        dy.cols_block(q * H, H), dtheta.cols_block(L + q * b.K, b.K));
    // The first block's input is the data: no gradient past its MLP.
    MatView<T> dp = i > 0 ? rows(b.dpooled) : MatView<T>{};
    b.mlp.backward(ctx, rows(b.pooled), theta, dtheta, dp, in.first_window);
    if (i > 0) b.pool.backward(ctx, rows(b.r), rows(b.pooled).cols_block(0, b.P), dp, dr_in);
    if (exog && b.width() > b.P) {
      MatView<T> de = rows(b.dexog);
      b.mlp.input_grad_columns(b.P, de, false);
      add_exog_grads(ctx, b, in, de);
    }
  });
}

template <class T>
void NHITS<T>::register_zones(profile::Recorder& rec, int model) {
  const double e = sizeof(T), L = double(cfg_.input_size), H = double(cfg_.h),
               M = double(cfg_.outputs);
  // Per window: pooling, the MLP, the interpolation of each output's knots (and their
  // reordering when M > 1), the residual update and forecast sum.
  this->register_block_zones(
      rec, model,
      [&](size_t, const NHitsBlock<T>& b, double rows) {
        profile::Cost c = b.pool.forward_cost(rows) + b.mlp.forward_cost(rows) +
                          b.interp.forward_cost(rows * M) + profile::elementwise(rows, L, 1, 2, e) +
                          profile::elementwise(rows, H * M, 1, 2, e);
        if (M > 1) c += profile::elementwise(rows, H * M, 0, 1, e);
        return c;
      },
      [&](size_t i, const NHitsBlock<T>& b, double rows) {
        profile::Cost c = b.mlp.backward_cost(rows, i > 0) + b.interp.backward_cost(rows * M) +
                          profile::elementwise(rows, L, 1, 1, e);
        if (i > 0) c += b.pool.backward_cost(rows) + profile::elementwise(rows, L, 1, 2, e);
        if (cfg_.exog_grads)
          c += b.mlp.input_grad_columns_cost(rows, double(b.width() - b.P)) +
               b.pool.backward_cost(rows * double(b.X)) +
               b.pool_futr.backward_cost(rows * double(b.F)) +
               profile::elementwise(rows, double(b.width() - b.P), 1, 2, e);
        return c;
      });
}

template class NHITS<float>;
template class NHITS<double>;

}  // namespace shoal::models
