#include "shoal/models/nbeats.h"

#include <algorithm>
#include <string_view>

#include "shoal/models/residual_stack.h"
#include "shoal/models/zones.h"
#include "shoal/profile/cost.h"

namespace shoal::models {
// One block: MLP → θ → basis → (backcast, forecast).
template <class T>
struct NBEATS<T>::Block {
  layers::BasisExpansion<T> basis;
  ThetaMLP<T> mlp;
  Buffer<T> r, theta, back, fore;  // [B, L], [B, S], [B, L], [B, H·M]
  Buffer<T> dtheta, dback;

  Block(const Config& c, const std::string& stack, size_t index)
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

template <class T>
void NBEATS<T>::Config::visit(OptionVisitor& v) {
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

template <class T>
void NBEATS<T>::Config::validate() const {
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
  SHOAL_CHECK(outputs >= 1, "nbeats: outputs per forecast value must be >= 1, got {}", outputs);
}

template <class T>
void NBEATS<T>::Config::set_shape(const WindowShape& s) {
  SHOAL_CHECK(s.hist_exog == 0 && s.futr_exog == 0 && s.stat_exog == 0,
              "nbeats takes no exogenous inputs (got {} hist, {} futr, {} static)", s.hist_exog,
              s.futr_exog, s.stat_exog);
  SHOAL_CHECK(s.n_series == 1,
              "nbeats is a univariate model: fit it one series at a time, got {} series in one "
              "panel",
              s.n_series);
  h = s.h;
  input_size = s.input_size;
  n_series = 1;
  outputs = s.outputs;
}

template <class T>
NBEATS<T>::NBEATS(Config cfg) : cfg_(std::move(cfg)) {
  SHOAL_CHECK(cfg_.h > 0 && cfg_.input_size > 0 && cfg_.n_series == 1,
              "NBEATS needs h, input_size > 0 and one series, got {} {} {}", cfg_.h,
              cfg_.input_size, cfg_.n_series);
  cfg_.validate();
  for (size_t s = 0; s < cfg_.stack_types.size(); ++s)
    for (int64_t b = 0; b < cfg_.n_blocks[s]; ++b) {
      // shared_weights: the stack's later blocks run on its first block's weights.
      owner_.push_back(cfg_.shared_weights && b > 0 ? owner_.back() : blocks_.size());
      blocks_.push_back(std::make_unique<Block>(cfg_, cfg_.stack_types[s], blocks_.size()));
    }
  zones_.resize(blocks_.size());
}

template <class T>
NBEATS<T>::~NBEATS() = default;

template <class T>
void NBEATS<T>::each_block_param(size_t i,
                                 const std::function<void(const std::string&, Param<T>&)>& f) {
  const std::string prefix = "blocks." + std::to_string(i) + ".layers.";
  blocks_[i]->mlp.for_each_param([&](const std::string& n, Param<T>& p) { f(prefix + n, p); });
}

template <class T>
void NBEATS<T>::plan(Planner& planner, Index max_batch) {
  SHOAL_CHECK(max_batch > 0, "NBEATS max_batch must be > 0, got {}", max_batch);
  const Index B = max_batch, L = cfg_.input_size, HM = cfg_.h * cfg_.outputs;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    Block& b = *blocks_[i];
    const Index S = b.basis.theta_size();
    planner.push_scope("blocks." + std::to_string(i) + ".");
    planner.push_scope("layers.");
    b.mlp.plan(planner, B, owner_[i] != i ? &blocks_[owner_[i]]->mlp : nullptr);
    planner.pop_scope();
    planner.push_scope("basis.");
    b.basis.plan(planner, B);
    planner.pop_scope();
    planner.buffer(b.r, Region::kActivations, "r", {B, L});
    planner.buffer(b.theta, Region::kActivations, "theta", {B, S});
    planner.buffer(b.back, Region::kScratch, "back", {B, L});
    planner.buffer(b.fore, Region::kScratch, "fore", {B, HM});
    planner.buffer(b.dtheta, Region::kActivationGrads, "dtheta", {B, S});
    planner.buffer(b.dback, Region::kActivationGrads, "dback", {B, L});
    planner.pop_scope();
  }
  planner.buffer(out_, Region::kActivations, "out", {B, HM});
  planner.buffer(dr_, Region::kActivationGrads, "dr", {B, L});
  planner.buffer(drb_, Region::kScratch, "drb", {B, L});
}

template <class T>
void NBEATS<T>::init(RngStream& rng) {
  for (auto& b : blocks_) {
    b->mlp.init(rng);
    b->basis.init(rng);  // the fixed bases: draws nothing
  }
}

template <class T>
MatView<T> NBEATS<T>::forward(const Ctx& ctx, const ForecastInputs<T>& in) {
  const Index B = in.batch;
  profile::ZoneChain zone(ctx.profiler, B);
  auto rows = [B](Buffer<T>& buf) { return buf.mat().rows_block(0, B); };
  return residual_stack_forward<T>(
      in, cfg_.input_size, cfg_.h, cfg_.outputs, out_.mat().rows_block(0, B), zones_, zone,
      [&](size_t i) { return rows(blocks_[i]->r); },
      [&](size_t i, MatView<T> r) {
        Block& b = *blocks_[i];
        MatView<T> theta = rows(b.theta), back = rows(b.back), fore = rows(b.fore);
        b.mlp.forward(ctx, r, theta, in.first_window);
        b.basis.forward(ctx, theta, back, fore);
        return std::pair(ConstMat<T>(back), ConstMat<T>(fore));
      });
}

template <class T>
void NBEATS<T>::backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout) {
  const Index B = in.batch, L = cfg_.input_size;
  profile::ZoneChain zone(ctx.profiler, B);
  const ConstMat<T> dy(dout.data, B, cfg_.h * cfg_.outputs);
  auto rows = [B](Buffer<T>& buf) { return buf.mat().rows_block(0, B); };
  residual_stack_backward<T>(in, L, dr_.mat().rows_block(0, B), drb_.mat().rows_block(0, B), zones_,
                             zone, [&](size_t i, ConstMat<T> dr, MatView<T> dr_in) {
                               Block& b = *blocks_[i];
                               MatView<T> dback = rows(b.dback), dtheta = rows(b.dtheta);
                               for (Index w = 0; w < B; ++w)
                                 for (Index t = 0; t < L; ++t) dback(w, t) = -dr(w, t);
                               b.basis.backward(ctx, dback, dy, dtheta);
                               b.mlp.backward(ctx, rows(b.r), rows(b.theta), dtheta, dr_in,
                                              in.first_window);
                             });
}

template <class T>
void NBEATS<T>::register_zones(profile::Recorder& rec, int model) {
  const double e = sizeof(T), L = double(cfg_.input_size), H = double(cfg_.h * cfg_.outputs);
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const Block& b = *blocks_[i];
    // Per window: the MLP, the basis, the residual update and the forecast sum (H·M values).
    zones_[i] = cost_zones(
        rec, model, "blocks." + std::to_string(i), 1,
        [&](double rows) {
          return b.mlp.forward_cost(rows) + b.basis.forward_cost(rows) +
                 profile::elementwise(rows, L, 1, 2, e) + profile::elementwise(rows, H, 1, 2, e);
        },
        [&](double rows) {
          profile::Cost c = b.mlp.backward_cost(rows, i > 0) + b.basis.backward_cost(rows) +
                            profile::elementwise(rows, L, 1, 1, e);
          if (i > 0) c += profile::elementwise(rows, L, 1, 2, e);
          return c;
        });
  }
}

template class NBEATS<float>;
template class NBEATS<double>;

}  // namespace shoal::models
