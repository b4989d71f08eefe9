#include "shoal/models/nbeatsx.h"

#include <algorithm>
#include <string_view>

#include "residual_stack_impl.h"
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

  void plan(Planner& planner, Index B, const NBEATSx<T>& m) {
    const NBEATSxConfig& c = m.config();
    const Index L = c.input_size, H = c.h, S = theta_size();
    planner.push_scope("basis.");
    if (exogenous)
      exog_basis.plan(planner, B);
    else
      basis.plan(planner, B);
    planner.pop_scope();
    planner.buffer(r, Region::kActivations, "x", {B, L + c.exog_width()});
    planner.buffer(theta, Region::kActivations, "theta", {B, S});
    planner.buffer(back, Region::kScratch, "back", {B, L});
    planner.buffer(fore, Region::kScratch, "fore", {B, exogenous ? H : H * c.outputs});
    planner.buffer(dtheta, Region::kActivationGrads, "dtheta", {B, S});
    planner.buffer(dback, Region::kActivationGrads, "dback", {B, L});
  }
  void init(RngStream& rng) {
    mlp.init(rng);
    if (!exogenous) basis.init(rng);  // the fixed bases: draws nothing
  }
  std::pair<ConstMat<T>, ConstMat<T>> forward(const Ctx& ctx, const ForecastInputs<T>& in,
                                              MatView<T> x, const NBEATSx<T>& m) {
    const Index B = in.batch, L = m.config().input_size, E = m.config().exog_width();
    const MatView<T> ex = m.exog_.mat().rows_block(0, B);
    MatView<T> th = theta.mat().rows_block(0, B), bk = back.mat().rows_block(0, B),
               fc = fore.mat().rows_block(0, B);
    for (Index w = 0; w < B; ++w) std::copy(ex.row(w), ex.row(w) + E, x.row(w) + L);
    mlp.forward(ctx, x, th, in.first_window);
    if (exogenous)
      exog_basis.forward(ctx, th, m.basis_x_.mat().rows_block(0, B), bk, fc);
    else
      basis.forward(ctx, th, bk, fc);
    return {bk, fc};
  }
  void backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dy, ConstMat<T> dr,
                MatView<T> dinput, const NBEATSx<T>& m) {
    const Index B = in.batch, L = m.config().input_size, E = m.config().exog_width();
    const bool exog = m.config().exog_grads;
    MatView<T> db = dback.mat().rows_block(0, B), dth = dtheta.mat().rows_block(0, B);
    negate_into(dr, db);
    if (exogenous) {
      MatView<T> dbb = exog ? m.dbasis_block_.mat().rows_block(0, B) : MatView<T>{};
      exog_basis.backward(ctx, theta.mat().rows_block(0, B), m.basis_x_.mat().rows_block(0, B), db,
                          m.dy_exog_, dth, dbb);
      if (exog) layers::add_into<T>(dbb, m.dbasis_x_.mat().rows_block(0, B));
    } else {
      basis.backward(ctx, db, dy, dth);
    }
    // Only the residual's columns of the MLP's input gradient, none for the first block, whose
    // residual is the data; the exogenous ones only when asked for.
    mlp.backward(ctx, r.mat().rows_block(0, B), theta.mat().rows_block(0, B), dth, dinput,
                 in.first_window);
    if (exog && E > 0) mlp.input_grad_columns(L, m.dexog_.mat().rows_block(0, B), true);
  }
  // The exogenous copy, the MLP, the basis, the residual update, the forecast sum (H·M values;
  // an exogenous block's H broadcast over them).
  profile::Cost forward_cost(double rows, const NBEATSx<T>& m) const {
    const NBEATSxConfig& c = m.config();
    const double e = sizeof(T), L = double(c.input_size), HM = double(c.h * c.outputs),
                 E = double(c.exog_width());
    return profile::elementwise(rows, E, 0, 1, e) + mlp.forward_cost(rows) +
           (exogenous ? exog_basis.forward_cost(rows) : basis.forward_cost(rows)) +
           profile::elementwise(rows, L, 1, 2, e) + profile::elementwise(rows, HM, 1, 2, e);
  }
  profile::Cost backward_cost(double rows, bool dinput, const NBEATSx<T>& m) const {
    const NBEATSxConfig& c = m.config();
    const double e = sizeof(T), L = double(c.input_size), E = double(c.exog_width());
    const bool dx = c.exog_grads;
    profile::Cost cost =
        mlp.backward_cost(rows, dinput) +
        (exogenous ? exog_basis.backward_cost(rows, dx) : basis.backward_cost(rows)) +
        profile::elementwise(rows, L, 1, 1, e);
    if (dinput) cost += profile::elementwise(rows, L, 1, 2, e);
    if (dx) cost += mlp.input_grad_columns_cost(rows, E) + profile::elementwise(rows, E, 1, 2, e);
    return cost;
  }
};

void NBEATSxConfig::visit(OptionVisitor& v) {
  v("n_harmonics", n_harmonics, "Harmonics of the seasonality basis");
  v("n_polynomials", n_polynomials, "Degree of the trend basis");
  visit_stacks(v, "Stacks: identity, trend, seasonality, exogenous");
  visit_theta(v, "Dropout after each hidden activation");
  v("shared_weights", shared_weights, "A stack's blocks share its first block's weights");
}

void NBEATSxConfig::validate_options() const {
  static constexpr std::string_view kStacks[] = {"identity", "trend", "seasonality", "exogenous"};
  validate_stacks("nbeatsx", kStacks, h);
  if (n_harmonics < 1) option_out_of_range("n_harmonics", "an integer ≥ 1", double(n_harmonics));
  if (n_polynomials < 0)
    option_out_of_range("n_polynomials", "an integer ≥ 0", double(n_polynomials));
}

template <class T>
NBEATSx<T>::NBEATSx(NBEATSxConfig cfg) : Base(std::move(cfg)) {
  const NBEATSxConfig& c = this->cfg_;
  this->add_blocks(c.shared_weights, [&](size_t s, size_t index) {
    SHOAL_CHECK(c.stack_types[s] != "exogenous" || c.futr_exog + c.stat_exog > 0,
                "nbeatsx: an exogenous stack needs future or static exogenous inputs");
    return std::make_unique<NBeatsxBlock<T>>(c, c.stack_types[s], index);
  });
}

template <class T>
bool NBEATSx<T>::has_exogenous_block() const {
  for (const std::string& t : this->cfg_.stack_types)
    if (t == "exogenous") return true;
  return false;
}

template <class T>
void NBEATSx<T>::plan_inputs(Planner& planner, Index max_batch) {
  const NBEATSxConfig& c = this->cfg_;
  const Index B = max_batch, L = c.input_size, H = c.h, E = c.exog_width(),
              C = c.futr_exog + c.stat_exog;
  planner.buffer(exog_, Region::kActivations, "exog", {B, std::max<Index>(E, 1)});
  planner.buffer(basis_x_, Region::kActivations, "basis_x", {B, std::max<Index>((L + H) * C, 1)});
  if (c.outputs > 1 && has_exogenous_block())
    planner.buffer(dysum_, Region::kActivationGrads, "dysum", {B, H});
  if (!c.exog_grads) return;
  const Index X = c.hist_exog, F = c.futr_exog, S = c.stat_exog;
  if (E > 0) planner.buffer(dexog_, Region::kActivationGrads, "dexog", {B, E});
  if (C > 0 && has_exogenous_block()) {
    planner.buffer(dbasis_x_, Region::kActivationGrads, "dbasis_x", {B, (L + H) * C});
    planner.buffer(dbasis_block_, Region::kScratch, "dbasis_block", {B, (L + H) * C});
  }
  if (X > 0) planner.buffer(this->dhist_, Region::kActivationGrads, "dhist_exog", {B * X, L});
  if (F > 0) planner.buffer(this->dfutr_, Region::kActivationGrads, "dfutr_exog", {B * F, L + H});
  if (S > 0) planner.buffer(this->dstat_, Region::kActivationGrads, "dstat_exog", {B, S});
}

// neuralforecast's layouts: the MLP's [hist (t·X + x) | futr (t·F + f) | stat] and the
// exogenous basis' [L + H, F + S] (t·C + c), from shoal's channel-major [B, X, L] and
// [B, F, L + H] windows and the series' statics.
template <class T>
void NBEATSx<T>::before_forward(const ForecastInputs<T>& in) {
  const NBEATSxConfig& c = this->cfg_;
  const Index B = in.batch, L = c.input_size, H = c.h, X = c.hist_exog, F = c.futr_exog,
              S = c.stat_exog, C = F + S;
  MatView<T> ex = this->batch_rows(exog_, B), bx = this->batch_rows(basis_x_, B);
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
ConstMat<T> NBEATSx<T>::before_backward(const ForecastInputs<T>& in, ConstMat<T> dout) {
  const NBEATSxConfig& c = this->cfg_;
  const Index B = in.batch, H = c.h, M = c.outputs;
  const ConstMat<T> dy(dout.data, B, H * M);
  // An exogenous block's one output was broadcast over the M: its gradient is their sum.
  dy_exog_ = ConstMat<T>(dout.data, B, H);
  if (M > 1 && has_exogenous_block()) {
    MatView<T> ds = this->batch_rows(dysum_, B);
    for (Index w = 0; w < B; ++w)
      for (Index t = 0; t < H; ++t) {
        T sum = 0;
        for (Index q = 0; q < M; ++q) sum += dy(w, t * M + q);
        ds(w, t) = sum;
      }
    dy_exog_ = ds;
  }
  if (c.exog_grads) {
    // Sums over the blocks.
    const Index E = c.exog_width();
    MatView<T> dexog = this->batch_rows(dexog_, B), dbx = this->batch_rows(dbasis_x_, B);
    for (Index w = 0; w < B && E > 0; ++w) std::fill_n(dexog.row(w), E, T(0));
    for (Index w = 0; w < B && dbx.data != nullptr; ++w) std::fill_n(dbx.row(w), dbx.cols, T(0));
  }
  return dy;
}

template <class T>
void NBEATSx<T>::after_backward(const ForecastInputs<T>& in) {
  const NBEATSxConfig& c = this->cfg_;
  if (!c.exog_grads) return;
  const Index B = in.batch, L = c.input_size, H = c.h, X = c.hist_exog, F = c.futr_exog,
              S = c.stat_exog, C = F + S;
  const bool per_window = in.stat_window_stride > 0;
  const ConstMat<T> dex = this->batch_rows(dexog_, B);
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

template class ResidualStackModel<NBEATSx<float>, float, NBEATSxConfig, NBeatsxBlock<float>>;
template class ResidualStackModel<NBEATSx<double>, double, NBEATSxConfig, NBeatsxBlock<double>>;
template class NBEATSx<float>;
template class NBEATSx<double>;

}  // namespace shoal::models
