#include "shoal/models/theta_mlp.h"

#include "shoal/core/options.h"

#include <algorithm>

namespace shoal::models {

BlockActivation parse_block_activation(const std::string& name) {
  for (size_t i = 0; i < std::size(kBlockActivations); ++i)
    if (name == kBlockActivations[i]) return static_cast<BlockActivation>(i);
  throw Error(
      "activation must be one of ReLU, Softplus, Tanh, SELU, LeakyReLU, PReLU, Sigmoid, "
      "got '" +
      name + "'");
}

void validate_block_options(std::string_view model, const std::vector<int64_t>& mlp_units,
                            double dropout_prob_theta, const std::string& activation) {
  SHOAL_CHECK(!mlp_units.empty() && mlp_units.size() % 2 == 0,
              "{}: mlp_units are [in, out] pairs, flattened (an even count > 0), got {}", model,
              mlp_units.size());
  for (size_t i = 0; i < mlp_units.size(); ++i) {
    if (mlp_units[i] < 1) option_out_of_range("mlp_units", "integers ≥ 1", double(mlp_units[i]));
    SHOAL_CHECK(i < 2 || i % 2 == 1 || mlp_units[i] == mlp_units[i - 1],
                "{}: mlp_units pair {} starts at {} but the previous one ends at {}", model, i / 2,
                mlp_units[i], mlp_units[i - 1]);
  }
  if (!(dropout_prob_theta >= 0 && dropout_prob_theta < 1))
    option_out_of_range("dropout_prob_theta", "a probability in [0, 1)", dropout_prob_theta);
  parse_block_activation(activation);
}

template <class T>
ThetaMLP<T>::ThetaMLP(Config c) : cfg(std::move(c)), M(Index(cfg.mlp_units.size() / 2)) {
  const auto& u = cfg.mlp_units;
  SHOAL_CHECK(cfg.in > 0 && cfg.out > 0 && M > 0 && u.size() % 2 == 0,
              "block MLP needs in, out > 0 and [in, out] unit pairs, got {}, {}, {} units", cfg.in,
              cfg.out, u.size());
  const layers::Act hidden = fused_relu() ? layers::Act::kRelu : layers::Act::kNone;
  lins.push_back(layers::Linear<T>({.in = cfg.in, .out = u[0]}));
  seq.push_back(0);
  Index j = 1;
  for (Index m = 0; m < M; ++m) {
    lins.push_back(
        layers::Linear<T>({.in = u[size_t(2 * m)], .out = u[size_t(2 * m + 1)], .act = hidden}));
    seq.push_back(j);
    if (m == 0) act_seq = j + 1;
    j += cfg.dropout > 0 ? 3 : 2;
    drops.push_back(layers::Dropout<T>({.p = cfg.dropout, .stream = cfg.stream + uint64_t(m)}));
  }
  lins.push_back(layers::Linear<T>({.in = u.back(), .out = cfg.out}));
  seq.push_back(j);
  a.resize(size_t(M + 1));
  z.resize(size_t(M + 1));
  hact.resize(size_t(M + 1));
  da.resize(size_t(M + 1));
}

template <class T>
void ThetaMLP<T>::plan(Planner& planner, Index max_rows, ThetaMLP* owner_mlp) {
  const Index B = max_rows;
  owner = owner_mlp;
  if (owner != nullptr) {
    SHOAL_CHECK(
        owner->lins.size() == lins.size() && owner->cfg.in == cfg.in && owner->cfg.out == cfg.out,
        "a shared block MLP needs its owner's shape");
    // The Linears' own scratch only; their parameters are the owner's.
    for (size_t m = 0; m < lins.size(); ++m)
      planner.buffer(lins[m].dz, Region::kScratch, "dz" + std::to_string(m), {B, lins[m].cfg.out});
  }
  for (size_t m = 0; m < lins.size() && owner == nullptr; ++m) {
    planner.push_scope(std::to_string(seq[m]) + ".");
    lins[m].plan(planner, B);
    planner.pop_scope();
  }
  if (cfg.activation == BlockActivation::kPReLU && owner == nullptr) {
    planner.push_scope(std::to_string(act_seq) + ".");
    prelu.plan(planner, B);
    planner.pop_scope();
  }
  for (auto& d : drops) d.plan(planner, B);
  Index widest = 1;
  for (Index m = 0; m <= M; ++m) {
    const auto sm = std::to_string(m);
    const auto im = size_t(m);
    widest = std::max(widest, width(m));
    planner.buffer(a[im], Region::kActivations, "a" + sm, {B, width(m)});
    planner.buffer(da[im], Region::kActivationGrads, "da" + sm, {B, width(m)});
    if (m > 0 && !fused_relu())
      planner.buffer(z[im], Region::kActivations, "z" + sm, {B, width(m)});
    if (m > 0 && keeps_act_out())
      planner.buffer(hact[im], Region::kActivations, "h" + sm, {B, width(m)});
  }
  if (!fused_relu()) planner.buffer(dz, Region::kScratch, "dz", {B, widest});
}

template <class T>
void ThetaMLP<T>::bind_shared() {
  for (size_t m = 0; m < lins.size(); ++m) lins[m].p = owner->lins[m].p;
  prelu.p = owner->prelu.p;
}

template <class T>
void ThetaMLP<T>::init(RngStream& rng) {
  if (owner != nullptr) return;  // the owner's weights
  for (auto& lin : lins) lin.init(rng);
  if (cfg.activation == BlockActivation::kPReLU) prelu.init(rng);
}

template <class T>
void ThetaMLP<T>::act_forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y) {
  switch (cfg.activation) {
    case BlockActivation::kReLU:
      break;  // fused into the Linear
    case BlockActivation::kSoftplus:
      softplus.forward(ctx, x, y);
      break;
    case BlockActivation::kTanh:
      tanh.forward(ctx, x, y);
      break;
    case BlockActivation::kSELU:
      selu.forward(ctx, x, y);
      break;
    case BlockActivation::kLeakyReLU:
      leaky.forward(ctx, x, y);
      break;
    case BlockActivation::kPReLU:
      prelu.forward(ctx, x, y);
      break;
    case BlockActivation::kSigmoid:
      sigmoid.forward(ctx, x, y);
      break;
  }
}

template <class T>
void ThetaMLP<T>::act_backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy,
                               MatView<T> dx) {
  switch (cfg.activation) {
    case BlockActivation::kReLU:
      break;
    case BlockActivation::kSoftplus:
      softplus.backward(ctx, x, y, dy, dx);
      break;
    case BlockActivation::kTanh:
      tanh.backward(ctx, x, y, dy, dx);
      break;
    case BlockActivation::kSELU:
      selu.backward(ctx, x, y, dy, dx);
      break;
    case BlockActivation::kLeakyReLU:
      leaky.backward(ctx, x, y, dy, dx);
      break;
    case BlockActivation::kPReLU:
      prelu.backward(ctx, x, y, dy, dx);
      break;
    case BlockActivation::kSigmoid:
      sigmoid.backward(ctx, x, y, dy, dx);
      break;
  }
}

template <class T>
void ThetaMLP<T>::forward(const Ctx& ctx, ConstMat<T> x, MatView<T> theta, Index row0) {
  // Views only (the arena binds the owner's after plan): cheap enough to take every call.
  if (owner != nullptr) bind_shared();
  const Index B = x.rows;
  const bool dropping = ctx.training && cfg.dropout > 0;
  auto rows = [B](Buffer<T>& buf) { return buf.mat().rows_block(0, B); };
  lins[0].forward(ctx, x, rows(a[0]));
  for (Index m = 1; m <= M; ++m) {
    const auto im = size_t(m);
    MatView<T> am = rows(a[im]);
    if (fused_relu()) {
      lins[im].forward(ctx, rows(a[im - 1]), am);
    } else {
      lins[im].forward(ctx, rows(a[im - 1]), rows(z[im]));
      act_forward(ctx, rows(z[im]), keeps_act_out() ? rows(hact[im]) : am);
    }
    if (keeps_act_out())
      drops[im - 1].forward(ctx, rows(hact[im]), am, row0);
    else if (dropping)
      drops[im - 1].forward(ctx, am, am, row0);  // in place: ReLU's sign survives
  }
  lins[size_t(M + 1)].forward(ctx, rows(a[size_t(M)]), theta);
}

template <class T>
void ThetaMLP<T>::backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> theta, ConstMat<T> dtheta,
                           MatView<T> dx, Index row0) {
  const Index B = x.rows;
  const bool dropping = ctx.training && cfg.dropout > 0;
  auto rows = [B](Buffer<T>& buf) { return buf.mat().rows_block(0, B); };
  lins[size_t(M + 1)].backward(ctx, rows(a[size_t(M)]), theta, dtheta, rows(da[size_t(M)]));
  for (Index m = M; m >= 1; --m) {
    const auto im = size_t(m);
    MatView<T> am = rows(a[im]), dam = rows(da[im]);
    if (dropping) drops[im - 1].backward(ctx, am, am, dam, dam, row0);
    if (fused_relu()) {
      lins[im].backward(ctx, rows(a[im - 1]), am, dam, rows(da[im - 1]));
    } else {
      const ConstMat<T> h = keeps_act_out() ? rows(hact[im]) : am;
      MatView<T> dzm(dz.view.data, B, width(m));
      act_backward(ctx, rows(z[im]), h, dam, dzm);
      lins[im].backward(ctx, rows(a[im - 1]), rows(z[im]), dzm, rows(da[im - 1]));
    }
  }
  lins[0].backward(ctx, x, rows(a[0]), rows(da[0]), dx);
}

template <class T>
void ThetaMLP<T>::input_grad_columns(Index c0, MatView<T> dx, bool accumulate) const {
  SHOAL_DCHECK(c0 >= 0 && c0 + dx.cols <= cfg.in);
  const Index u = width(0);
  const MatView<T> da0 = da[0].mat().rows_block(0, dx.rows);
  const MatView<T> w = lins[0].p.weight.value.mat();
  kernels::gemm<T>(kernels::Trans::kNo, kernels::Trans::kNo, dx.rows, dx.cols, u, T(1), da0.data,
                   da0.ld, w.data + c0, w.ld, accumulate ? T(1) : T(0), dx.data, dx.ld);
}

template <class T>
double ThetaMLP<T>::act_flops(bool grad) const {
  switch (cfg.activation) {
    case BlockActivation::kReLU:
      return 0;  // counted by the Linear
    case BlockActivation::kPReLU:
      return grad ? 4 : 2;
    case BlockActivation::kSoftplus:
      return grad ? 4 : 3;
    case BlockActivation::kTanh:
      return grad ? 3 : 1;
    case BlockActivation::kSELU:
      return 3;
    case BlockActivation::kLeakyReLU:
      return grad ? 2 : 1;
    case BlockActivation::kSigmoid:
      return 3;
  }
  return 0;
}

template <class T>
profile::Cost ThetaMLP<T>::forward_cost(double rows) const {
  profile::Cost c;
  for (const auto& lin : lins) c += lin.forward_cost(rows);
  for (Index m = 1; m <= M; ++m) {
    const double w = double(width(m));
    if (!fused_relu()) c += profile::elementwise(rows, w, act_flops(false), 1, sizeof(T));
    c += drops[size_t(m - 1)].cost(rows, w);
  }
  return c;
}

template <class T>
profile::Cost ThetaMLP<T>::input_grad_columns_cost(double rows, double cols) const {
  const double u = double(width(0));
  return {2 * rows * u * cols, sizeof(T) * (rows * u + u * cols + rows * cols)};
}

template <class T>
profile::Cost ThetaMLP<T>::backward_cost(double rows, bool dx) const {
  profile::Cost c;
  for (size_t m = 0; m < lins.size(); ++m) c += lins[m].backward_cost(rows, m > 0 || dx);
  for (Index m = 1; m <= M; ++m) {
    const double w = double(width(m));
    if (!fused_relu()) c += profile::elementwise(rows, w, act_flops(true), 2, sizeof(T));
    c += drops[size_t(m - 1)].cost(rows, w);
  }
  return c;
}

template struct ThetaMLP<float>;
template struct ThetaMLP<double>;

}  // namespace shoal::models
