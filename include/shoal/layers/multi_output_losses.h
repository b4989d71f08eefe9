// Losses on several outputs per forecast value: neuralforecast 3.3.0's MQLoss (one output per
// quantile), DistributionLoss with a Normal, StudentT or Poisson likelihood (one output per
// parameter) and GMM, the Gaussian mixture (one output per component and parameter).
// A model built for one of them emits `outputs()` values per (window, step, series) instead of
// one; these structs take that raw output and return the scalar loss (double) and its gradient.
//
// Rows r of a [B·H, ·] view are (window b, step t = r mod H); W[r, n] = mask[r, n]·hw[t]
// (hw: the horizon weight, all ones when empty). Both losses are Σ ℓ[r, n]·W[r, n] / Σ W, with
// terms of zero weight dropped (neuralforecast's _weighted_mean / weighted_average) and 0 (and a
// zero gradient) when Σ W = 0; a non-finite ℓ at a weighted term propagates, as there.
//
// MQLoss, quantiles q_1..q_Q, pred [B·H, N·Q] (column n·Q + k: series n's quantile k, the layout
// of neuralforecast's domain_map reshape [B, H, N, Q]), e = ŷ − y:
//   ℓ = Σ_k (q_k·max(−e, 0) + (1 − q_k)·max(e, 0))
//   ∂ℓ/∂ŷ_k = 1 − q_k (e > 0), −q_k (e < 0), ½ − q_k (e = 0: torch.maximum splits a tie).
// A sum over the quantiles, not their mean: neuralforecast 3.3.0's factor 1/len(quantiles) is
// taken of quantiles[None, None, None, :], whose len is 1.
// The weight of a (row, series) is shared by its Q outputs and counted once in Σ W.
//
// DistributionLoss, K parameters, raw [B·H, K·N] (column k·N + n: parameter k of series n, as
// neuralforecast's tensor_split of the last dimension), loc and scale [B, N] (the scaler's shift
// and scale of each window's series, broadcast over the H steps), softplus = torch's (threshold
// 20). The domain map (neuralforecast's *_scale_decouple) and the negative log-likelihood of y:
//   Normal   (m, s):    μ = m·scale + loc, σ = (softplus(s) + 0.2)·scale, z = (y − μ)/σ
//            ℓ = z²/2 + log σ + ½ log 2π
//   StudentT (d, m, s): ν = 3 + softplus(d), μ = m·scale + loc, σ = (softplus(s) + 0.1)·scale
//            ℓ = ½(ν + 1) log(1 + z²/ν) + log σ + ½ log ν + ½ log π + lgamma(ν/2) − lgamma((ν+1)/2)
//   Poisson  (m):       λ = softplus(m·scale + loc) + 1e-10
//            ℓ = λ − y·log λ + lgamma(y + 1)   (y·log λ = 0 at y = 0, torch's xlogy)
// GMM, C components, P = 2 (3 when weighted) parts, M = P·C outputs per value. Its raw columns
// are n·M + p·C + c (neuralforecast's GMM.domain_map reshapes to [B, H, N, M] and splits the last
// dimension into P parts): part 0 the means m_c, part 1 the scales s_c, part 2 the weights u_c.
//            μ_c = m_c·scale + loc, σ_c = (softplus(s_c) + 0.2)·scale,
//            log w_c = log_softmax(u)_c (weighted) or −log C,
//            a_c = log w_c − z_c²/2 − log σ_c − ½ log 2π,   ℓ = −logsumexp_c a_c
// GMM has no horizon weight (neuralforecast's GMM takes none): W = mask.
// Derivations of the gradients: docs/derivations/losses.md.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "shoal/core/tensor.h"

namespace shoal::layers {

// neuralforecast's level_to_outputs: 0.5 then the levels' 50 ∓ l/2 percentiles sorted, repeated
// levels dropped, each rounded to float32 as torch.Tensor(...) / 100 stores it.
std::vector<double> level_quantiles(std::span<const double> level);
// neuralforecast's quantiles_to_outputs: repeated quantiles dropped (first kept, order kept),
// each rounded to float32 as torch.Tensor stores it.
std::vector<double> unique_quantiles(std::span<const double> quantiles);

struct MultiQuantileConfig {
  std::vector<double> quantiles;       // [Q], each in [0, 1]
  std::vector<double> horizon_weight;  // [H] weight of each horizon step; empty: all ones
};

template <class T>
struct MultiQuantileLoss {
  MultiQuantileConfig cfg;

  explicit MultiQuantileLoss(MultiQuantileConfig c);
  Index outputs() const { return Index(cfg.quantiles.size()); }
  // pred [B·H, N·Q], target and mask [B·H, N] (mask empty: all ones).
  double forward(ConstMat<T> pred, ConstMat<T> target, ConstMat<T> mask = {}) const;
  // Overwrites dpred [B·H, N·Q] with dloss · ∂L/∂pred.
  void backward(ConstMat<T> pred, ConstMat<T> target, MatView<T> dpred, ConstMat<T> mask = {},
                double dloss = 1.0) const;
  // Σ W of a batch's mask [B·H, N] (empty: all ones) with the horizon weight.
  double denominator(ConstMat<T> mask, Index rows, Index cols) const;
  // One chunk of a batch (its rows start at a window): returns its Σ ℓ·W and writes
  // dpred = scale · ∂(Σ ℓ·W)/∂pred; with scale = 1 / denominator() of the whole batch the
  // chunks' gradients are the batch's (PointLoss::chunk).
  double chunk(ConstMat<T> pred, ConstMat<T> target, ConstMat<T> mask, MatView<T> dpred,
               T scale) const;
};

enum class DistributionKind : uint8_t { kNormal, kStudentT, kPoisson, kGmm };

// The largest GMM: per-value work keeps its components on the stack (no allocation in a step).
inline constexpr Index kMaxMixtureComponents = 32;

struct DistributionConfig {
  DistributionKind kind = DistributionKind::kNormal;
  std::vector<double> horizon_weight;  // [H]; empty: all ones (GMM: must be empty)
  Index n_components = 1;              // GMM's C
  bool weighted = false;               // GMM: learned weights (part 2)
};

// Parameters per value of the one-family kinds: Normal's (loc, scale), StudentT's (df, loc,
// scale), Poisson's (rate).
Index distribution_parameters(DistributionKind k);
// Outputs per value of any kind (GMM: P·C).
Index distribution_parameters(const DistributionConfig& c);
// Column of a value's output j (in [0, M)) for series n of N: j·N + n, GMM's n·M + j.
Index distribution_column(const DistributionConfig& c, Index n_series, Index n, Index j);
// neuralforecast's return_params order of a value's mapped parameters: output j of
// forecast parameter i (GMM interleaves the components: μ_1, σ_1 (, w_1), μ_2, ...; the other
// kinds keep their order).
Index distribution_return_param(const DistributionConfig& c, Index i);

template <class T>
struct DistributionNll {
  DistributionConfig cfg;

  explicit DistributionNll(DistributionConfig c);
  Index outputs() const { return distribution_parameters(cfg); }
  // The domain map: params [B·H, K·N] (same layout as raw) = (μ, σ), (ν, μ, σ), (λ) or GMM's
  // (μ_c, σ_c (, w_c)).
  void map_parameters(ConstMat<T> raw, ConstMat<T> loc, ConstMat<T> scale, MatView<T> params) const;
  // The distribution's mean [B·H, N] (neuralforecast's distr.mean): μ, λ or Σ_c w_c·μ_c.
  void mean(ConstMat<T> raw, ConstMat<T> loc, ConstMat<T> scale, MatView<T> mean) const;
  // raw [B·H, K·N], target and mask [B·H, N] (mask empty: all ones), loc and scale [B, N].
  double forward(ConstMat<T> raw, ConstMat<T> target, ConstMat<T> loc, ConstMat<T> scale,
                 ConstMat<T> mask = {}) const;
  // Overwrites draw [B·H, K·N] with dloss · ∂L/∂raw.
  void backward(ConstMat<T> raw, ConstMat<T> target, ConstMat<T> loc, ConstMat<T> scale,
                MatView<T> draw, ConstMat<T> mask = {}, double dloss = 1.0) const;
  // As MultiQuantileLoss's: Σ W, and one chunk's Σ ℓ·W with draw = scale · its gradient.
  double denominator(ConstMat<T> mask, Index rows, Index cols) const;
  double chunk(ConstMat<T> raw, ConstMat<T> target, ConstMat<T> loc, ConstMat<T> scale,
               ConstMat<T> mask, MatView<T> draw, T scale_factor) const;
};

// neuralforecast's DistributionLoss.sample on mapped parameters params [rows, K·N] (see
// map_parameters): num_samples draws per value, their mean [rows, N] and their empirical
// quantiles [rows, N·Q] (column n·Q + k; torch.quantile's linear interpolation between order
// statistics, position q·(num_samples − 1)). StudentT draws are μ + σ·X/√(C/ν), X ~ N(0, 1),
// C ~ χ²(ν) = 2·Gamma(ν/2) (torch's construction; Gamma by Marsaglia–Tsang). Poisson draws:
// inversion for λ < 10, Hörmann's transformed rejection (PTRS) above, as torch's sampler. GMM
// draws: a component c with probability w_c, then μ_c + σ_c·X. The draws come from shoal's
// Philox stream (seed): the same distribution as neuralforecast's, not the same numbers.
template <class T>
void sample_distribution(const DistributionConfig& cfg, ConstMat<T> params,
                         std::span<const double> quantiles, Index num_samples, uint64_t seed,
                         MatView<T> mean, MatView<T> quants);
template <class T>
void sample_distribution(DistributionKind kind, ConstMat<T> params,
                         std::span<const double> quantiles, Index num_samples, uint64_t seed,
                         MatView<T> mean, MatView<T> quants) {
  sample_distribution<T>(DistributionConfig{.kind = kind}, params, quantiles, num_samples, seed,
                         mean, quants);
}

}  // namespace shoal::layers
