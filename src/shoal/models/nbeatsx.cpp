#include "shoal/models/nbeatsx.h"

#include <algorithm>

#include "shoal/models/residual_stack.h"
#include "shoal/models/zones.h"
#include "shoal/profile/cost.h"

namespace shoal::models {
template <class T>
struct NBeatsxBlock {
  bool exogenous;
  layers::BasisExpansion<T> basis;
  layers::ExogenousBasis<T> exog_basis;
  ThetaMLP<T> mlp;
  // r [B, L + E]: the residual, then the exogenous inputs; θ [B, S_θ]; back [B, L]; fore
  // [B, H·M] (exogenous: [B, H])
  Buffer<T> r, theta, back, fore;
  Buffer<T> dtheta, dback;

  Index theta_size() const { return exogenous ? exog_basis.theta_size() : basis.theta_size(); }

  NBeatsxBlock(const NBEATSxConfig& c, const std::string& stack, size_t index)
      : exogenous(stack == "exogenous"),
        basis({.kind = basis_kind(stack),
               .input_size = c.input_size,
               .h = c.h,
               .n_polynomials = c.n_polynomials,
               .n_harmonics = c.n_harmonics,
               .outputs = c.outputs}),
        exog_basis({.input_size = c.input_size, .h = c.h, .channels = c.futr_exog + c.stat_exog}),
        mlp({.in = c.input_size + c.exog_width(),
             .mlp_units = c.mlp_units,
             .out = theta_size(),
             .activation = parse_block_activation(c.activation),
             .dropout = c.dropout_prob_theta,
             .stream = 0x4e58'0000 + index * 64}) {}
};

void NBEATSxConfig::visit(OptionVisitor& v) {
  v("n_harmonics", n_harmonics, "Harmonics of the seasonality basis");
  v("n_polynomials", n_polynomials, "Degree of the trend basis");
  v("stack_types", stack_types, "Stacks: identity, trend, seasonality, exogenous");
  v("n_blocks", n_blocks, "Blocks per stack");
  v("mlp_units", mlp_units, "Hidden layers as flattened [in, out] pairs, e.g. 512,512,512,512");
  v("dropout_prob_theta", dropout_prob_theta, "Dropout after each hidden activation");
  v.choice("activation", activation, kBlockActivations, "Hidden activation");
  v("shared_weights", shared_weights, "A stack's blocks share its first block's weights");
}

void NBEATSxConfig::validate_options() const {
  const size_t s = stack_types.size();
  SHOAL_CHECK(s > 0 && n_blocks.size() == s,
              "nbeatsx: stack_types and n_blocks need the same length, got {} and {}", s,
              n_blocks.size());
  for (size_t i = 0; i < s; ++i) {
    const auto& t = stack_types[i];
    SHOAL_CHECK(t == "identity" || t == "trend" || t == "seasonality" || t == "exogenous",
                "nbeatsx: block type '{}' not found (identity, trend, seasonality, exogenous)", t);
    SHOAL_CHECK(h != 1 || (t != "trend" && t != "seasonality"),
                "nbeatsx: horizon h=1 is incompatible with seasonality or trend in stacks");
    if (n_blocks[i] < 0) option_out_of_range("n_blocks", "integers ≥ 0", double(n_blocks[i]));
  }
  if (n_harmonics < 1) option_out_of_range("n_harmonics", "an integer ≥ 1", double(n_harmonics));
  if (n_polynomials < 0)
    option_out_of_range("n_polynomials", "an integer ≥ 0", double(n_polynomials));
  validate_block_options("nbeatsx", mlp_units, dropout_prob_theta, activation);
}

template <class T>
NBEATSx<T>::NBEATSx(Config cfg) : Base(std::move(cfg)) {
  for (size_t s = 0; s < cfg_.stack_types.size(); ++s) {
    SHOAL_CHECK(cfg_.stack_types[s] != "exogenous" || cfg_.futr_exog + cfg_.stat_exog > 0,
                "nbeatsx: an exogenous stack needs future or static exogenous inputs");
    for (int64_t b = 0; b < cfg_.n_blocks[s]; ++b)
      this->add_block(
          std::make_unique<NBeatsxBlock<T>>(cfg_, cfg_.stack_types[s], this->blocks_.size()),
          cfg_.shared_weights && b > 0);
  }
}

template <class T>
NBEATSx<T>::~NBEATSx() = default;

template <class T>
void NBEATSx<T>::plan(Planner& planner, Index max_batch) {
  const Index B = max_batch, L = cfg_.input_size, H = cfg_.h, E = cfg_.exog_width(),
              C = cfg_.futr_exog + cfg_.stat_exog;
  this->plan_blocks(
      planner, max_batch,
      [&](size_t, NBeatsxBlock<T>& b) {
        const Index S = b.theta_size();
        planner.push_scope("basis.");
        if (b.exogenous)
          b.exog_basis.plan(planner, B);
        else
          b.basis.plan(planner, B);
        planner.pop_scope();
        planner.buffer(b.r, Region::kActivations, "x", {B, L + E});
        planner.buffer(b.theta, Region::kActivations, "theta", {B, S});
        planner.buffer(b.back, Region::kScratch, "back", {B, L});
        planner.buffer(b.fore, Region::kScratch, "fore", {B, b.exogenous ? H : H * cfg_.outputs});
        planner.buffer(b.dtheta, Region::kActivationGrads, "dtheta", {B, S});
        planner.buffer(b.dback, Region::kActivationGrads, "dback", {B, L});
      },
      [&] {
        planner.buffer(exog_, Region::kActivations, "exog", {B, std::max<Index>(E, 1)});
        planner.buffer(basis_x_, Region::kActivations, "basis_x",
                       {B, std::max<Index>((L + H) * C, 1)});
      });
  if (cfg_.outputs > 1 && has_exogenous_block())
    planner.buffer(dysum_, Region::kActivationGrads, "dysum", {B, H});
  if (!cfg_.exog_grads) return;
  const Index X = cfg_.hist_exog, F = cfg_.futr_exog, S = cfg_.stat_exog;
  if (E > 0) planner.buffer(dexog_, Region::kActivationGrads, "dexog", {B, E});
  if (C > 0 && has_exogenous_block()) {
    planner.buffer(dbasis_x_, Region::kActivationGrads, "dbasis_x", {B, (L + H) * C});
    planner.buffer(dbasis_block_, Region::kScratch, "dbasis_block", {B, (L + H) * C});
  }
  if (X > 0) planner.buffer(this->dhist_, Region::kActivationGrads, "dhist_exog", {B * X, L});
  if (F > 0) planner.buffer(this->dfutr_, Region::kActivationGrads, "dfutr_exog", {B * F, L + H});
  if (S > 0) planner.buffer(this->dstat_, Region::kActivationGrads, "dstat_exog", {B, S});
}

template <class T>
void NBEATSx<T>::init(RngStream& rng) {
  for (auto& b : this->blocks_) {
    b->mlp.init(rng);
    if (!b->exogenous) b->basis.init(rng);  // the fixed bases: draws nothing
  }
}

// neuralforecast's layouts: the MLP's [hist (t·X + x) | futr (t·F + f) | stat] and the
// exogenous basis' [L + H, F + S] (t·C + c), from shoal's channel-major [B, X, L] and
// [B, F, L + H] windows and the series' statics.
template <class T>
void NBEATSx<T>::gather_exog(const ForecastInputs<T>& in) {
  const Index B = in.batch, L = cfg_.input_size, H = cfg_.h, X = cfg_.hist_exog, F = cfg_.futr_exog,
              S = cfg_.stat_exog, C = F + S;
  MatView<T> ex = batch_rows(exog_, B), bx = batch_rows(basis_x_, B);
  for (Index w = 0; w < B; ++w) {
    T* e = ex.row(w);
    for (Index t = 0; t < L; ++t)
      for (Index x = 0; x < X; ++x) e[t * X + x] = in.hist_exog[(w * X + x) * L + t];
    e += L * X;
    for (Index t = 0; t < L + H; ++t)
      for (Index f = 0; f < F; ++f) {
        const T v = in.futr_exog[(w * F + f) * (L + H) + t];
        e[t * F + f] = v;
        bx(w, t * C + f) = v;
      }
    e += (L + H) * F;
    const T* st = in.stat_exog + w * in.stat_window_stride;
    for (Index s = 0; s < S; ++s) {
      e[s] = st[s];
      for (Index t = 0; t < L + H; ++t) bx(w, t * C + F + s) = st[s];
    }
  }
}

template <class T>
MatView<T> NBEATSx<T>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  const Index B = in.batch, L = cfg_.input_size, E = cfg_.exog_width();
  gather_exog(in);
  const MatView<T> ex = batch_rows(exog_, B), bx = batch_rows(basis_x_, B);
  return this->forward_blocks(ctx, in, [&](size_t, NBeatsxBlock<T>& b, MatView<T> x) {
    MatView<T> theta = batch_rows(b.theta, B), back = batch_rows(b.back, B),
               fore = batch_rows(b.fore, B);
    for (Index w = 0; w < B; ++w) std::copy(ex.row(w), ex.row(w) + E, x.row(w) + L);
    b.mlp.forward(ctx, x, theta, in.first_window);
    if (b.exogenous)
      b.exog_basis.forward(ctx, theta, bx, back, fore);
    else
      b.basis.forward(ctx, theta, back, fore);
    return std::pair(ConstMat<T>(back), ConstMat<T>(fore));
  });
}

template <class T>
void NBEATSx<T>::backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout) {
  const Index B = in.batch, L = cfg_.input_size, H = cfg_.h, M = cfg_.outputs;
  const ConstMat<T> dy(dout.data, B, H * M);
  // An exogenous block's one output was broadcast over the M: its gradient is their sum.
  ConstMat<T> dy_exog(dout.data, B, H);
  if (M > 1 && has_exogenous_block()) {
    MatView<T> ds = batch_rows(dysum_, B);
    for (Index w = 0; w < B; ++w)
      for (Index t = 0; t < H; ++t) {
        T sum = 0;
        for (Index q = 0; q < M; ++q) sum += dy(w, t * M + q);
        ds(w, t) = sum;
      }
    dy_exog = ds;
  }
  const bool exog = cfg_.exog_grads;
  const Index E = cfg_.exog_width();
  MatView<T> dexog = batch_rows(dexog_, B), dbx = batch_rows(dbasis_x_, B);
  if (exog) {
    // Sums over the blocks.
    for (Index w = 0; w < B && E > 0; ++w) std::fill_n(dexog.row(w), E, T(0));
    for (Index w = 0; w < B && dbx.data != nullptr; ++w) std::fill_n(dbx.row(w), dbx.cols, T(0));
  }
  this->backward_blocks(ctx, in, [&](size_t, NBeatsxBlock<T>& b, ConstMat<T> dr, MatView<T> dr_in) {
    MatView<T> dback = batch_rows(b.dback, B), dtheta = batch_rows(b.dtheta, B);
    this->negate_into(dr, dback);
    if (b.exogenous) {
      MatView<T> dbb = exog ? batch_rows(dbasis_block_, B) : MatView<T>{};
      b.exog_basis.backward(ctx, batch_rows(b.theta, B), batch_rows(basis_x_, B), dback, dy_exog,
                            dtheta, dbb);
      if (exog) layers::add_into<T>(dbb, dbx);
    } else {
      b.basis.backward(ctx, dback, dy, dtheta);
    }
    // Only the residual's columns of the MLP's input gradient, none for the first block, whose
    // residual is the data; the exogenous ones only when asked for.
    b.mlp.backward(ctx, batch_rows(b.r, B), batch_rows(b.theta, B), dtheta, dr_in, in.first_window);
    if (exog && E > 0) b.mlp.input_grad_columns(L, dexog, true);
  });
  if (exog) scatter_exog_grads(in);
}

template <class T>
void NBEATSx<T>::scatter_exog_grads(const ForecastInputs<T>& in) {
  const Index B = in.batch, L = cfg_.input_size, H = cfg_.h, X = cfg_.hist_exog, F = cfg_.futr_exog,
              S = cfg_.stat_exog, C = F + S;
  const bool per_window = in.stat_window_stride > 0;
  const ConstMat<T> dex = batch_rows(dexog_, B);
  T *dhist = this->dhist_.view.data, *dfutr = this->dfutr_.view.data,
    *dstat = this->dstat_.view.data;
  const bool basis = dbasis_x_.view.data != nullptr;
  if (S > 0) std::fill_n(dstat, per_window ? B * S : S, T(0));
  for (Index w = 0; w < B; ++w) {
    const T* e = dex.row(w);
    for (Index t = 0; t < L; ++t)
      for (Index x = 0; x < X; ++x) dhist[(w * X + x) * L + t] = e[t * X + x];
    e += L * X;
    const T* bx = basis ? dbasis_x_.mat().row(w) : nullptr;
    for (Index t = 0; t < L + H; ++t)
      for (Index f = 0; f < F; ++f)
        dfutr[(w * F + f) * (L + H) + t] = e[t * F + f] + (basis ? bx[t * C + f] : 0);
    e += (L + H) * F;
    T* ds = dstat + (per_window ? w * S : 0);
    for (Index s = 0; s < S; ++s) {
      T g = e[s];
      for (Index t = 0; t < L + H && basis; ++t) g += bx[t * C + F + s];
      ds[s] += g;
    }
  }
}

template <class T>
void NBEATSx<T>::register_zones(profile::Recorder& rec, int model) {
  const double e = sizeof(T), L = double(cfg_.input_size), H = double(cfg_.h),
               M = double(cfg_.outputs), E = double(cfg_.exog_width());
  const bool dx = cfg_.exog_grads;
  // Per window: the exogenous copy, the MLP, the basis, the residual update, the forecast sum
  // (H·M values; an exogenous block's H broadcast over them).
  this->register_block_zones(
      rec, model,
      [&](size_t, const NBeatsxBlock<T>& b, double rows) {
        return profile::elementwise(rows, E, 0, 1, e) + b.mlp.forward_cost(rows) +
               (b.exogenous ? b.exog_basis.forward_cost(rows) : b.basis.forward_cost(rows)) +
               profile::elementwise(rows, L, 1, 2, e) + profile::elementwise(rows, H * M, 1, 2, e);
      },
      [&](size_t i, const NBeatsxBlock<T>& b, double rows) {
        profile::Cost c =
            b.mlp.backward_cost(rows, i > 0) +
            (b.exogenous ? b.exog_basis.backward_cost(rows, dx) : b.basis.backward_cost(rows)) +
            profile::elementwise(rows, L, 1, 1, e);
        if (i > 0) c += profile::elementwise(rows, L, 1, 2, e);
        if (dx)
          c += b.mlp.input_grad_columns_cost(rows, E) + profile::elementwise(rows, E, 1, 2, e);
        return c;
      });
}

template class NBEATSx<float>;
template class NBEATSx<double>;

}  // namespace shoal::models
