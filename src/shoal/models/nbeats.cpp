#include "shoal/models/nbeats.h"

#include <algorithm>
#include <string_view>

#include "shoal/models/residual_stack.h"
#include "shoal/models/zones.h"
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
};

void NBEATSConfig::visit(OptionVisitor& v) {
  v("n_harmonics", n_harmonics, "Harmonics of the seasonality basis");
  v("n_basis", n_basis, "Degree of the trend basis (n_basis + 1 terms)");
  v.choice("basis", basis, layers::kTrendBases, "Trend basis");
  v("stack_types", stack_types, "Stacks: identity, trend, seasonality");
  v("n_blocks", n_blocks, "Blocks per stack");
  v("mlp_units", mlp_units, "Hidden layers as flattened [in, out] pairs, e.g. 512,512,512,512");
  v("dropout_prob_theta", dropout_prob_theta, "Must be 0 (as in neuralforecast's NBEATS)");
  v.choice("activation", activation, kBlockActivations, "Hidden activation");
  v("shared_weights", shared_weights, "A stack's blocks share its first block's weights");
}

void NBEATSConfig::validate_options() const {
  const size_t s = stack_types.size();
  SHOAL_CHECK(s > 0 && n_blocks.size() == s,
              "nbeats: stack_types and n_blocks need the same length, got {} and {}", s,
              n_blocks.size());
  for (size_t i = 0; i < s; ++i) {
    const auto& t = stack_types[i];
    SHOAL_CHECK(t == "identity" || t == "trend" || t == "seasonality",
                "nbeats: block type '{}' not found (identity, trend, seasonality)", t);
    SHOAL_CHECK(h != 1 || t == "identity",
                "nbeats: horizon h=1 is incompatible with seasonality or trend in stacks");
    if (n_blocks[i] < 0) option_out_of_range("n_blocks", "integers ≥ 0", double(n_blocks[i]));
  }
  if (n_harmonics < 1) option_out_of_range("n_harmonics", "an integer ≥ 1", double(n_harmonics));
  if (n_basis < 0) option_out_of_range("n_basis", "an integer ≥ 0", double(n_basis));
  layers::parse_trend_basis(basis);
  SHOAL_CHECK(basis != "linear_hat" || n_basis >= 1,
              "nbeats: the linear_hat basis needs n_basis "
              ">= 1, got {}",
              n_basis);
  if (dropout_prob_theta != 0)
    option_out_of_range("dropout_prob_theta", "0 (NBEATS has no dropout)", dropout_prob_theta);
  validate_block_options("nbeats", mlp_units, dropout_prob_theta, activation);
}

template <class T>
NBEATS<T>::NBEATS(Config cfg) : Base(std::move(cfg)) {
  const Config& c = cfg_;
  for (size_t s = 0; s < c.stack_types.size(); ++s)
    for (int64_t b = 0; b < c.n_blocks[s]; ++b)
      this->add_block(std::make_unique<NBeatsBlock<T>>(c, c.stack_types[s], this->blocks_.size()),
                      c.shared_weights && b > 0);
}

template <class T>
NBEATS<T>::~NBEATS() = default;

template <class T>
void NBEATS<T>::plan(Planner& planner, Index max_batch) {
  const Index B = max_batch, L = cfg_.input_size, HM = cfg_.h * cfg_.outputs;
  this->plan_blocks(
      planner, max_batch,
      [&](size_t, NBeatsBlock<T>& b) {
        const Index S = b.basis.theta_size();
        planner.push_scope("basis.");
        b.basis.plan(planner, B);
        planner.pop_scope();
        planner.buffer(b.r, Region::kActivations, "r", {B, L});
        planner.buffer(b.theta, Region::kActivations, "theta", {B, S});
        planner.buffer(b.back, Region::kScratch, "back", {B, L});
        planner.buffer(b.fore, Region::kScratch, "fore", {B, HM});
        planner.buffer(b.dtheta, Region::kActivationGrads, "dtheta", {B, S});
        planner.buffer(b.dback, Region::kActivationGrads, "dback", {B, L});
      },
      [] {});
}

template <class T>
void NBEATS<T>::init(RngStream& rng) {
  for (auto& b : this->blocks_) {
    b->mlp.init(rng);
    b->basis.init(rng);  // the fixed bases: draws nothing
  }
}

template <class T>
MatView<T> NBEATS<T>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  const Index B = in.batch;
  return this->forward_blocks(ctx, in, [&](size_t, NBeatsBlock<T>& b, MatView<T> r) {
    MatView<T> theta = batch_rows(b.theta, B), back = batch_rows(b.back, B),
               fore = batch_rows(b.fore, B);
    b.mlp.forward(ctx, r, theta, in.first_window);
    b.basis.forward(ctx, theta, back, fore);
    return std::pair(ConstMat<T>(back), ConstMat<T>(fore));
  });
}

template <class T>
void NBEATS<T>::backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout) {
  const Index B = in.batch;
  const ConstMat<T> dy(dout.data, B, cfg_.h * cfg_.outputs);
  this->backward_blocks(ctx, in, [&](size_t, NBeatsBlock<T>& b, ConstMat<T> dr, MatView<T> dr_in) {
    MatView<T> dback = batch_rows(b.dback, B), dtheta = batch_rows(b.dtheta, B);
    this->negate_into(dr, dback);
    b.basis.backward(ctx, dback, dy, dtheta);
    b.mlp.backward(ctx, batch_rows(b.r, B), batch_rows(b.theta, B), dtheta, dr_in, in.first_window);
  });
}

template <class T>
void NBEATS<T>::register_zones(profile::Recorder& rec, int model) {
  const double e = sizeof(T), L = double(cfg_.input_size), H = double(cfg_.h * cfg_.outputs);
  // Per window: the MLP, the basis, the residual update and the forecast sum (H·M values).
  this->register_block_zones(
      rec, model,
      [&](size_t, const NBeatsBlock<T>& b, double rows) {
        return b.mlp.forward_cost(rows) + b.basis.forward_cost(rows) +
               profile::elementwise(rows, L, 1, 2, e) + profile::elementwise(rows, H, 1, 2, e);
      },
      [&](size_t i, const NBeatsBlock<T>& b, double rows) {
        profile::Cost c = b.mlp.backward_cost(rows, i > 0) + b.basis.backward_cost(rows) +
                          profile::elementwise(rows, L, 1, 1, e);
        if (i > 0) c += profile::elementwise(rows, L, 1, 2, e);
        return c;
      });
}

template class NBEATS<float>;
template class NBEATS<double>;

}  // namespace shoal::models
