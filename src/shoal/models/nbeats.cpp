#include "shoal/models/nbeats.h"

#include <string_view>

#include "residual_stack_impl.h"
#include "shoal/profile/cost.h"

namespace shoal::models {

template <class T>
struct NBeatsBlock {
  layers::BasisExpansion<T> basis;
  ThetaMLP<T> mlp;
  Buffer<T> r, theta, back, fore;  // [B, L], [B, S], [B, L], [B, H·M]
  Buffer<T> dtheta, dback;

  NBeatsBlock(const NBEATSConfig& c, const std::string& stack, size_t index)
      : basis({.kind = basis_kind(stack),
               .input_size = c.input_size,
               .h = c.h,
               .n_polynomials = c.n_basis,
               .trend = layers::parse_trend_basis(c.basis),
               .n_harmonics = c.n_harmonics,
               .outputs = c.outputs}),
        mlp({.in = c.input_size,
             .mlp_units = c.mlp_units,
             .out = basis.theta_size(),
             .activation = parse_block_activation(c.activation),
             .dropout = c.dropout_prob_theta,
             .stream = 0x4e42'0000 + index * 64}) {}

  void plan(Planner& planner, Index B, const NBEATS<T>& m) {
    const Index L = m.config().input_size, S = basis.theta_size();
    planner.push_scope("basis.");
    basis.plan(planner, B);
    planner.pop_scope();
    planner.buffer(r, Region::kActivations, "r", {B, L});
    planner.buffer(theta, Region::kActivations, "theta", {B, S});
    planner.buffer(back, Region::kScratch, "back", {B, L});
    planner.buffer(fore, Region::kScratch, "fore", {B, m.config().h * m.config().outputs});
    planner.buffer(dtheta, Region::kActivationGrads, "dtheta", {B, S});
    planner.buffer(dback, Region::kActivationGrads, "dback", {B, L});
  }
  void init(RngStream& rng) {
    mlp.init(rng);
    basis.init(rng);  // the fixed bases: draws nothing
  }
  std::pair<ConstMat<T>, ConstMat<T>> forward(const Ctx& ctx, const ForecastInputs<T>& in,
                                              MatView<T> x, const NBEATS<T>&) {
    const Index B = in.batch;
    MatView<T> th = theta.mat().rows_block(0, B), bk = back.mat().rows_block(0, B),
               fc = fore.mat().rows_block(0, B);
    mlp.forward(ctx, x, th, in.first_window);
    basis.forward(ctx, th, bk, fc);
    return {bk, fc};
  }
  void backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dy, ConstMat<T> dr,
                MatView<T> dinput, const NBEATS<T>&) {
    const Index B = in.batch;
    MatView<T> db = dback.mat().rows_block(0, B), dth = dtheta.mat().rows_block(0, B);
    negate_into(dr, db);
    basis.backward(ctx, db, dy, dth);
    mlp.backward(ctx, r.mat().rows_block(0, B), theta.mat().rows_block(0, B), dth, dinput,
                 in.first_window);
  }
  // The MLP, the basis, the residual update and the forecast sum (H·M values).
  profile::Cost forward_cost(double rows, const NBEATS<T>& m) const {
    const double e = sizeof(T), L = double(m.config().input_size),
                 H = double(m.config().h * m.config().outputs);
    return mlp.forward_cost(rows) + basis.forward_cost(rows) +
           profile::elementwise(rows, L, 1, 2, e) + profile::elementwise(rows, H, 1, 2, e);
  }
  profile::Cost backward_cost(double rows, bool dinput, const NBEATS<T>& m) const {
    const double e = sizeof(T), L = double(m.config().input_size);
    profile::Cost c = mlp.backward_cost(rows, dinput) + basis.backward_cost(rows) +
                      profile::elementwise(rows, L, 1, 1, e);
    if (dinput) c += profile::elementwise(rows, L, 1, 2, e);
    return c;
  }
};

void NBEATSConfig::visit(OptionVisitor& v) {
  v("n_harmonics", n_harmonics, "Harmonics of the seasonality basis");
  v("n_basis", n_basis, "Degree of the trend basis (n_basis + 1 terms)");
  v.choice("basis", basis, layers::kTrendBases, "Trend basis");
  visit_stacks(v, "Stacks: identity, trend, seasonality");
  visit_theta(v, "Must be 0 (as in neuralforecast's NBEATS)");
  v("shared_weights", shared_weights, "A stack's blocks share its first block's weights");
}

void NBEATSConfig::validate_options() const {
  static constexpr std::string_view kStacks[] = {"identity", "trend", "seasonality"};
  validate_stacks("nbeats", kStacks, h);
  if (n_harmonics < 1) option_out_of_range("n_harmonics", "an integer ≥ 1", double(n_harmonics));
  if (n_basis < 0) option_out_of_range("n_basis", "an integer ≥ 0", double(n_basis));
  layers::parse_trend_basis(basis);
  SHOAL_CHECK(basis != "linear_hat" || n_basis >= 1,
              "nbeats: the linear_hat basis needs n_basis >= 1, got {}", n_basis);
  if (dropout_prob_theta != 0)
    option_out_of_range("dropout_prob_theta", "0 (NBEATS has no dropout)", dropout_prob_theta);
}

template <class T>
NBEATS<T>::NBEATS(NBEATSConfig cfg)
    : ResidualStackModel<NBEATS<T>, T, NBEATSConfig, NBeatsBlock<T>>(std::move(cfg)) {
  const NBEATSConfig& c = this->cfg_;
  this->add_blocks(c.shared_weights, [&](size_t s, size_t index) {
    return std::make_unique<NBeatsBlock<T>>(c, c.stack_types[s], index);
  });
}

template class ResidualStackModel<NBEATS<float>, float, NBEATSConfig, NBeatsBlock<float>>;
template class ResidualStackModel<NBEATS<double>, double, NBEATSConfig, NBeatsBlock<double>>;
template class NBEATS<float>;
template class NBEATS<double>;

}  // namespace shoal::models
