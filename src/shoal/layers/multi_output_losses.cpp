#include "shoal/layers/multi_output_losses.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "shoal/core/error.h"

namespace shoal::layers {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw Error(what);
}

// Checks the shapes of a multi-output loss: out [rows, N·K], target and mask [rows, N], a
// horizon weight dividing rows.
template <class T>
void check_shapes(ConstMat<T> out, ConstMat<T> target, ConstMat<T> mask, Index k,
                  const std::vector<double>& hw, const char* name) {
  require(out.rows == target.rows && out.cols == target.cols * k,
          std::string(name) + ": outputs must be [rows, N·" + std::to_string(k) +
              "] for a target [rows, N]");
  require(mask.data == nullptr || (mask.rows == target.rows && mask.cols == target.cols),
          std::string(name) + ": mask must have the target's shape");
  require(hw.empty() || target.rows % Index(hw.size()) == 0,
          std::string(name) + ": rows must be a multiple of the horizon weight's length");
}

// W[r, n] = mask[r, n]·hw[r mod H].
template <class T>
double weight_of(ConstMat<T> mask, const std::vector<double>& hw, Index r, Index n) {
  const double m = mask.data == nullptr ? 1.0 : double(mask(r, n));
  return hw.empty() ? m : m * hw[size_t(r % Index(hw.size()))];
}

template <class T>
double weight_sum(ConstMat<T> mask, const std::vector<double>& hw, Index rows, Index cols) {
  double s = 0;
  for (Index r = 0; r < rows; ++r)
    for (Index n = 0; n < cols; ++n) s += weight_of(mask, hw, r, n);
  return s;
}

// torch.nn.functional.softplus (beta 1, threshold 20) and its derivative.
double softplus(double x) {
  return x > 20 ? x : std::log1p(std::exp(x));
}
double softplus_grad(double x) {
  return x > 20 ? 1.0 : 1.0 / (1.0 + std::exp(-x));
}

// ψ(x) for x > 0: the recurrence ψ(x) = ψ(x + 1) − 1/x up to x ≥ 6, then the asymptotic series
// (error below 1e-13 there).
double digamma(double x) {
  double acc = 0;
  while (x < 6) {
    acc -= 1 / x;
    x += 1;
  }
  const double f = 1 / (x * x);
  return acc + std::log(x) - 0.5 / x -
         f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132))));
}

// One value's mapped parameters, its NLL and the NLL's derivatives w.r.t. the raw outputs.
struct Nll {
  double value;
  double d[3];  // ∂ℓ/∂raw_k
};

// Poisson: λ = softplus(x) + 1e-10, x = m·scale + loc; ∂ℓ/∂λ = 1 − y/λ.
Nll poisson_nll(double raw, double y, double loc, double scale) {
  const double x = raw * scale + loc, rate = softplus(x) + 1e-10;
  const double ylog = y == 0 ? 0.0 : y * std::log(rate);  // torch's xlogy
  Nll out{};
  out.value = rate - ylog + std::lgamma(y + 1);
  out.d[0] = (1 - y / rate) * softplus_grad(x) * scale;
  return out;
}

Nll nll(DistributionKind kind, const double* raw, double y, double loc, double scale) {
  Nll out{};
  if (kind == DistributionKind::kNormal) {
    const double sd = (softplus(raw[1]) + 0.2) * scale;
    const double mu = raw[0] * scale + loc;
    const double z = (y - mu) / sd;
    out.value = 0.5 * z * z + std::log(sd) + 0.5 * std::log(2 * std::numbers::pi);
    out.d[0] = -z / sd * scale;                                   // ∂ℓ/∂μ = −z/σ
    out.d[1] = (1 - z * z) / sd * softplus_grad(raw[1]) * scale;  // ∂ℓ/∂σ = (1 − z²)/σ
    return out;
  }
  const double nu = 3 + softplus(raw[0]);
  const double mu = raw[1] * scale + loc;
  const double sd = (softplus(raw[2]) + 0.1) * scale;
  const double z = (y - mu) / sd, z2 = z * z;
  out.value = 0.5 * (nu + 1) * std::log1p(z2 / nu) + std::log(sd) + 0.5 * std::log(nu) +
              0.5 * std::log(std::numbers::pi) + std::lgamma(0.5 * nu) -
              std::lgamma(0.5 * (nu + 1));
  const double dz = (nu + 1) * z / (nu + z2);  // ∂ℓ/∂z
  const double dnu = 0.5 * std::log1p(z2 / nu) - 0.5 * (nu + 1) * z2 / (nu * (nu + z2)) + 0.5 / nu +
                     0.5 * digamma(0.5 * nu) - 0.5 * digamma(0.5 * (nu + 1));
  out.d[0] = dnu * softplus_grad(raw[0]);
  out.d[1] = -dz / sd * scale;
  out.d[2] = (1 - dz * z) / sd * softplus_grad(raw[2]) * scale;
  return out;
}

// The strides of output j of series n among a row's columns: n·sn + j·sj.
struct Strides {
  Index sn, sj;
};
Strides strides_of(const DistributionConfig& c, Index n_series) {
  if (c.kind == DistributionKind::kGmm) return {distribution_parameters(c), 1};
  return {1, n_series};
}

constexpr Index kMaxOutputs = 3 * kMaxMixtureComponents;

// log w_c of a GMM value (raw u = p + 2C when weighted): log_softmax(u), or −log C.
void gmm_log_weights(const DistributionConfig& c, const double* p, double* logw) {
  const Index C = c.n_components;
  if (!c.weighted) {
    for (Index k = 0; k < C; ++k) logw[k] = -std::log(double(C));
    return;
  }
  const double* u = p + 2 * C;
  double top = u[0];
  for (Index k = 1; k < C; ++k) top = std::max(top, u[k]);
  double sum = 0;
  for (Index k = 0; k < C; ++k) sum += std::exp(u[k] - top);
  const double lse = top + std::log(sum);
  for (Index k = 0; k < C; ++k) logw[k] = u[k] - lse;
}

// GMM's ℓ = −logsumexp_c a_c and d = ∂ℓ/∂p, with the responsibilities r_c = softmax(a)_c:
// ∂ℓ/∂m_c = −r_c·z_c/σ_c·scale, ∂ℓ/∂s_c = −r_c·(z_c² − 1)/σ_c·softplus'(s_c)·scale,
// ∂ℓ/∂u_c = w_c − r_c.
double gmm_nll(const DistributionConfig& c, const double* p, double y, double loc, double scale,
               double* d) {
  const Index C = c.n_components;
  double a[kMaxMixtureComponents], z[kMaxMixtureComponents], sd[kMaxMixtureComponents];
  gmm_log_weights(c, p, a);
  const double half_log_2pi = 0.5 * std::log(2 * std::numbers::pi);
  double top = -INFINITY;
  for (Index k = 0; k < C; ++k) {
    sd[k] = (softplus(p[C + k]) + 0.2) * scale;
    z[k] = (y - (p[k] * scale + loc)) / sd[k];
    a[k] += -0.5 * z[k] * z[k] - std::log(sd[k]) - half_log_2pi;
    top = std::max(top, a[k]);
  }
  double sum = 0;
  for (Index k = 0; k < C; ++k) sum += std::exp(a[k] - top);
  const double lse = top + std::log(sum);
  if (d != nullptr) {
    double logw[kMaxMixtureComponents];
    if (c.weighted) gmm_log_weights(c, p, logw);
    for (Index k = 0; k < C; ++k) {
      const double r = std::exp(a[k] - lse);
      d[k] = -r * z[k] / sd[k] * scale;
      d[C + k] = -r * (z[k] * z[k] - 1) / sd[k] * softplus_grad(p[C + k]) * scale;
      if (c.weighted) d[2 * C + k] = std::exp(logw[k]) - r;
    }
  }
  return -lse;
}

template <class T>
void check_loc_scale(ConstMat<T> target, ConstMat<T> loc, ConstMat<T> scale) {
  require(loc.rows > 0 && loc.cols == target.cols && scale.rows == loc.rows &&
              scale.cols == loc.cols && target.rows % loc.rows == 0,
          "DistributionLoss: loc and scale must be [windows, N] with rows a multiple of windows");
}

}  // namespace

std::vector<double> level_quantiles(std::span<const double> level) {
  std::vector<double> unique;
  for (double l : level)
    if (std::find(unique.begin(), unique.end(), l) == unique.end()) unique.push_back(l);
  std::vector<double> qs;
  for (double l : unique) {
    qs.push_back(50 - l / 2);
    qs.push_back(50 + l / 2);
  }
  std::stable_sort(qs.begin(), qs.end());
  qs.insert(qs.begin(), 50.0);
  for (double& q : qs) q = double(float(q) / 100.0f);
  return qs;
}

std::vector<double> unique_quantiles(std::span<const double> quantiles) {
  std::vector<double> out;
  for (double q : quantiles)
    if (std::find(out.begin(), out.end(), q) == out.end()) out.push_back(q);
  for (double& q : out) q = double(float(q));
  return out;
}

template <class T>
MultiQuantileLoss<T>::MultiQuantileLoss(MultiQuantileConfig c) : cfg(std::move(c)) {
  require(!cfg.quantiles.empty(), "MQLoss: needs at least one quantile");
  for (double q : cfg.quantiles)
    require(q >= 0 && q <= 1, "MQLoss: quantiles must lie in [0, 1], got " + std::to_string(q));
}

namespace {

// Σ ℓ·W over (row, series) pairs of nonzero weight and, when dpred is given, dpred = s·∂(ℓ·W)
// (zero where W = 0).
template <class T>
double mq_terms(const std::vector<double>& qs, const std::vector<double>& hw, ConstMat<T> pred,
                ConstMat<T> target, ConstMat<T> mask, MatView<T>* dpred, double s) {
  const auto nq = Index(qs.size());
  double num = 0;
  for (Index r = 0; r < target.rows; ++r)
    for (Index n = 0; n < target.cols; ++n) {
      const double w = weight_of(mask, hw, r, n);
      double l = 0;
      for (Index k = 0; k < nq; ++k) {
        const double e = double(pred(r, n * nq + k)) - double(target(r, n));
        const double q = qs[size_t(k)];
        if (w != 0) l += q * std::max(-e, 0.0) + (1 - q) * std::max(e, 0.0);
        if (dpred != nullptr) {
          const double g = e > 0 ? 1 - q : e < 0 ? -q : 0.5 - q;
          (*dpred)(r, n * nq + k) = T(w == 0 ? 0.0 : g * w * s);
        }
      }
      if (w != 0) num += l * w;
    }
  return num;
}

}  // namespace

template <class T>
double MultiQuantileLoss<T>::denominator(ConstMat<T> mask, Index rows, Index cols) const {
  return weight_sum(mask, cfg.horizon_weight, rows, cols);
}

template <class T>
double MultiQuantileLoss<T>::forward(ConstMat<T> pred, ConstMat<T> target, ConstMat<T> mask) const {
  check_shapes(pred, target, mask, outputs(), cfg.horizon_weight, "MQLoss");
  const double num = mq_terms(cfg.quantiles, cfg.horizon_weight, pred, target, mask,
                              static_cast<MatView<T>*>(nullptr), 0.0);
  const double den = denominator(mask, target.rows, target.cols);
  return den == 0 ? 0.0 : num / den;
}

template <class T>
void MultiQuantileLoss<T>::backward(ConstMat<T> pred, ConstMat<T> target, MatView<T> dpred,
                                    ConstMat<T> mask, double dloss) const {
  check_shapes(pred, target, mask, outputs(), cfg.horizon_weight, "MQLoss");
  require(dpred.rows == pred.rows && dpred.cols == pred.cols, "MQLoss: dpred must match pred");
  const double den = denominator(mask, target.rows, target.cols);
  mq_terms(cfg.quantiles, cfg.horizon_weight, pred, target, mask, &dpred,
           den == 0 ? 0.0 : dloss / den);
}

template <class T>
double MultiQuantileLoss<T>::chunk(ConstMat<T> pred, ConstMat<T> target, ConstMat<T> mask,
                                   MatView<T> dpred, T scale) const {
  check_shapes(pred, target, mask, outputs(), cfg.horizon_weight, "MQLoss");
  require(dpred.rows == pred.rows && dpred.cols == pred.cols, "MQLoss: dpred must match pred");
  return mq_terms(cfg.quantiles, cfg.horizon_weight, pred, target, mask, &dpred, double(scale));
}

Index distribution_parameters(DistributionKind k) {
  switch (k) {
    case DistributionKind::kNormal:
      return 2;
    case DistributionKind::kStudentT:
      return 3;
    case DistributionKind::kPoisson:
      return 1;
    case DistributionKind::kGmm:
      break;
  }
  throw Error("GMM's outputs depend on its components: use distribution_parameters(config)");
}

Index distribution_parameters(const DistributionConfig& c) {
  if (c.kind == DistributionKind::kGmm) return (c.weighted ? 3 : 2) * c.n_components;
  return distribution_parameters(c.kind);
}

Index distribution_column(const DistributionConfig& c, Index n_series, Index n, Index j) {
  const Strides st = strides_of(c, n_series);
  return n * st.sn + j * st.sj;
}

Index distribution_return_param(const DistributionConfig& c, Index i) {
  if (c.kind != DistributionKind::kGmm) return i;
  const Index parts = c.weighted ? 3 : 2;
  return (i % parts) * c.n_components + i / parts;
}

template <class T>
DistributionNll<T>::DistributionNll(DistributionConfig c) : cfg(std::move(c)) {
  if (cfg.kind == DistributionKind::kGmm) {
    require(cfg.n_components >= 1 && cfg.n_components <= kMaxMixtureComponents,
            "GMM: n_components must lie in [1, " + std::to_string(kMaxMixtureComponents) +
                "], got " + std::to_string(cfg.n_components));
    require(cfg.horizon_weight.empty(), "GMM: takes no horizon weight");
  }
}

template <class T>
void DistributionNll<T>::map_parameters(ConstMat<T> raw, ConstMat<T> loc, ConstMat<T> scale,
                                        MatView<T> params) const {
  const Index K = outputs(), N = raw.cols / K;
  require(raw.cols == N * K && params.rows == raw.rows && params.cols == raw.cols,
          "DistributionLoss: raw and params must be [rows, K·N]");
  require(loc.cols == N && scale.cols == N && loc.rows == scale.rows && loc.rows > 0 &&
              raw.rows % loc.rows == 0,
          "DistributionLoss: loc and scale must be [windows, N]");
  const Index h = raw.rows / loc.rows;
  if (cfg.kind == DistributionKind::kPoisson) {
    for (Index r = 0; r < raw.rows; ++r)
      for (Index n = 0; n < N; ++n)
        params(r, n) = T(
            softplus(double(raw(r, n)) * double(scale(r / h, n)) + double(loc(r / h, n))) + 1e-10);
    return;
  }
  if (cfg.kind == DistributionKind::kGmm) {
    const Index C = cfg.n_components;
    double p[kMaxOutputs], logw[kMaxMixtureComponents];
    for (Index r = 0; r < raw.rows; ++r)
      for (Index n = 0; n < N; ++n) {
        const double l = double(loc(r / h, n)), s = double(scale(r / h, n));
        for (Index j = 0; j < K; ++j) p[j] = double(raw(r, n * K + j));
        if (cfg.weighted) gmm_log_weights(cfg, p, logw);
        for (Index c = 0; c < C; ++c) {
          params(r, n * K + c) = T(p[c] * s + l);
          params(r, n * K + C + c) = T((softplus(p[C + c]) + 0.2) * s);
          if (cfg.weighted) params(r, n * K + 2 * C + c) = T(std::exp(logw[c]));
        }
      }
    return;
  }
  const bool t = cfg.kind == DistributionKind::kStudentT;
  const double eps = t ? 0.1 : 0.2;
  for (Index r = 0; r < raw.rows; ++r)
    for (Index n = 0; n < N; ++n) {
      const double l = double(loc(r / h, n)), s = double(scale(r / h, n));
      const Index m = t ? 1 : 0;  // index of the mean among the parameters
      if (t) params(r, n) = T(3 + softplus(double(raw(r, n))));
      params(r, m * N + n) = T(double(raw(r, m * N + n)) * s + l);
      params(r, (m + 1) * N + n) = T((softplus(double(raw(r, (m + 1) * N + n))) + eps) * s);
    }
}

template <class T>
void DistributionNll<T>::mean(ConstMat<T> raw, ConstMat<T> loc, ConstMat<T> scale,
                              MatView<T> mean) const {
  const Index K = outputs(), N = raw.cols / K;
  require(raw.cols == N * K && mean.rows == raw.rows && mean.cols == N,
          "DistributionLoss: raw [rows, K·N] and mean [rows, N]");
  require(loc.cols == N && scale.cols == N && loc.rows == scale.rows && loc.rows > 0 &&
              raw.rows % loc.rows == 0,
          "DistributionLoss: loc and scale must be [windows, N]");
  const Index h = raw.rows / loc.rows, C = cfg.n_components;
  const Index mu = cfg.kind == DistributionKind::kStudentT ? 1 : 0;
  double p[kMaxOutputs], logw[kMaxMixtureComponents];
  for (Index r = 0; r < raw.rows; ++r)
    for (Index n = 0; n < N; ++n) {
      const double l = double(loc(r / h, n)), s = double(scale(r / h, n));
      double m = 0;
      if (cfg.kind == DistributionKind::kPoisson) {
        m = softplus(double(raw(r, n)) * s + l) + 1e-10;
      } else if (cfg.kind == DistributionKind::kGmm) {
        for (Index j = 0; j < K; ++j) p[j] = double(raw(r, n * K + j));
        gmm_log_weights(cfg, p, logw);
        for (Index c = 0; c < C; ++c) m += std::exp(logw[c]) * (p[c] * s + l);
      } else {  // in T, as the model's own arithmetic (torch's mean·scale + loc)
        mean(r, n) = raw(r, mu * N + n) * scale(r / h, n) + loc(r / h, n);
        continue;
      }
      mean(r, n) = T(m);
    }
}

namespace {

// Σ ℓ·W over (row, series) pairs of nonzero weight and, when draw is given, draw = s·∂(ℓ·W)
// (zero where W = 0), for a kind of at most 3 parameters (columns k·N + n) whose value's ℓ and
// ∂ℓ/∂p `value_nll` gives. loc and scale rows are windows of h = rows / loc.rows steps.
template <class T, class ValueNll>
double family_terms(ValueNll value_nll, Index K, const std::vector<double>& hw, ConstMat<T> raw,
                    ConstMat<T> target, ConstMat<T> loc, ConstMat<T> scale, ConstMat<T> mask,
                    MatView<T>* draw, double s) {
  const Index N = target.cols;
  const Index h = target.rows / loc.rows;
  double num = 0;
  for (Index r = 0; r < target.rows; ++r)
    for (Index n = 0; n < N; ++n) {
      const double w = weight_of(mask, hw, r, n);
      if (w == 0) {
        if (draw != nullptr)
          for (Index k = 0; k < K; ++k) (*draw)(r, k * N + n) = T(0);
        continue;
      }
      double p[3];
      for (Index k = 0; k < K; ++k) p[k] = double(raw(r, k * N + n));
      const Nll v =
          value_nll(p, double(target(r, n)), double(loc(r / h, n)), double(scale(r / h, n)));
      num += v.value * w;
      if (draw != nullptr)
        for (Index k = 0; k < K; ++k) (*draw)(r, k * N + n) = T(v.d[k] * w * s);
    }
  return num;
}

// GMM's Σ ℓ·W (W = mask) and draw = s·∂(ℓ·W), series n's outputs at columns n·M + j.
template <class T>
double gmm_terms(const DistributionConfig& cfg, ConstMat<T> raw, ConstMat<T> target,
                 ConstMat<T> loc, ConstMat<T> scale, ConstMat<T> mask, MatView<T>* draw, double s) {
  const Index K = distribution_parameters(cfg), N = target.cols;
  const Index h = target.rows / loc.rows;
  double p[kMaxOutputs], d[kMaxOutputs];
  double num = 0;
  for (Index r = 0; r < target.rows; ++r)
    for (Index n = 0; n < N; ++n) {
      const double w = weight_of(mask, cfg.horizon_weight, r, n);
      if (w == 0) {
        if (draw != nullptr)
          for (Index k = 0; k < K; ++k) (*draw)(r, n * K + k) = T(0);
        continue;
      }
      for (Index k = 0; k < K; ++k) p[k] = double(raw(r, n * K + k));
      num += w * gmm_nll(cfg, p, double(target(r, n)), double(loc(r / h, n)),
                         double(scale(r / h, n)), draw != nullptr ? d : nullptr);
      if (draw != nullptr)
        for (Index k = 0; k < K; ++k) (*draw)(r, n * K + k) = T(d[k] * w * s);
    }
  return num;
}

template <class T>
double nll_terms(const DistributionConfig& cfg, ConstMat<T> raw, ConstMat<T> target,
                 ConstMat<T> loc, ConstMat<T> scale, ConstMat<T> mask, MatView<T>* draw, double s) {
  const DistributionKind kind = cfg.kind;
  if (kind == DistributionKind::kGmm) return gmm_terms(cfg, raw, target, loc, scale, mask, draw, s);
  if (kind == DistributionKind::kPoisson)
    return family_terms(
        [](const double* p, double y, double l, double c) { return poisson_nll(p[0], y, l, c); }, 1,
        cfg.horizon_weight, raw, target, loc, scale, mask, draw, s);
  return family_terms(
      [kind](const double* p, double y, double l, double c) { return nll(kind, p, y, l, c); },
      distribution_parameters(kind), cfg.horizon_weight, raw, target, loc, scale, mask, draw, s);
}

}  // namespace

template <class T>
double DistributionNll<T>::denominator(ConstMat<T> mask, Index rows, Index cols) const {
  return weight_sum(mask, cfg.horizon_weight, rows, cols);
}

template <class T>
double DistributionNll<T>::forward(ConstMat<T> raw, ConstMat<T> target, ConstMat<T> loc,
                                   ConstMat<T> scale, ConstMat<T> mask) const {
  check_shapes(raw, target, mask, outputs(), cfg.horizon_weight, "DistributionLoss");
  check_loc_scale(target, loc, scale);
  const double num =
      nll_terms(cfg, raw, target, loc, scale, mask, static_cast<MatView<T>*>(nullptr), 0.0);
  const double den = denominator(mask, target.rows, target.cols);
  return den == 0 ? 0.0 : num / den;
}

template <class T>
void DistributionNll<T>::backward(ConstMat<T> raw, ConstMat<T> target, ConstMat<T> loc,
                                  ConstMat<T> scale, MatView<T> draw, ConstMat<T> mask,
                                  double dloss) const {
  check_shapes(raw, target, mask, outputs(), cfg.horizon_weight, "DistributionLoss");
  check_loc_scale(target, loc, scale);
  require(draw.rows == raw.rows && draw.cols == raw.cols, "DistributionLoss: draw must match raw");
  const double den = denominator(mask, target.rows, target.cols);
  nll_terms(cfg, raw, target, loc, scale, mask, &draw, den == 0 ? 0.0 : dloss / den);
}

template <class T>
double DistributionNll<T>::chunk(ConstMat<T> raw, ConstMat<T> target, ConstMat<T> loc,
                                 ConstMat<T> scale, ConstMat<T> mask, MatView<T> draw, T s) const {
  check_shapes(raw, target, mask, outputs(), cfg.horizon_weight, "DistributionLoss");
  check_loc_scale(target, loc, scale);
  require(draw.rows == raw.rows && draw.cols == raw.cols, "DistributionLoss: draw must match raw");
  return nll_terms(cfg, raw, target, loc, scale, mask, &draw, double(s));
}

template struct MultiQuantileLoss<float>;
template struct MultiQuantileLoss<double>;
template struct DistributionNll<float>;
template struct DistributionNll<double>;

}  // namespace shoal::layers
