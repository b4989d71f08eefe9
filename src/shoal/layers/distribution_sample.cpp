// Sampling predictions from a fitted distribution (layers/multi_output_losses.h).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "shoal/core/error.h"
#include "shoal/core/rng.h"
#include "shoal/layers/multi_output_losses.h"

namespace shoal::layers {
namespace {

// Gamma(a, 1) for a ≥ 1 (ν/2 ≥ 1.5 here): Marsaglia and Tsang's squeeze-free acceptance test.
double gamma_draw(RngStream& rng, double a) {
  const double d = a - 1.0 / 3, c = 1 / std::sqrt(9 * d);
  for (;;) {
    const double x = rng.normal();
    double v = 1 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    const double u = u01_open0(rng.next_u32());
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

// Poisson(λ): inversion by multiplication below λ = 10, Hörmann's PTRS (transformed rejection
// with squeeze, 1993) above, the split torch's and numpy's samplers make.
double poisson_draw(RngStream& rng, double lam) {
  if (lam < 10) {
    const double limit = std::exp(-lam);
    double prod = u01_open0(rng.next_u32()), k = 0;
    while (prod > limit) {
      k += 1;
      prod *= u01_open0(rng.next_u32());
    }
    return k;
  }
  const double slam = std::sqrt(lam), loglam = std::log(lam);
  const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  const double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    const double u = u01_open0(rng.next_u32()) - 0.5, v = u01_open0(rng.next_u32());
    const double us = 0.5 - std::abs(u);
    const double k = std::floor((2 * a / us + b) * u + lam + 0.43);
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (std::log(v) + std::log(invalpha) - std::log(a / (us * us) + b) <=
        -lam + k * loglam - std::lgamma(k + 1))
      return k;
  }
}

// One value's parameters p (in its output order) → one draw.
struct Sampler {
  const DistributionConfig& cfg;
  double operator()(RngStream& rng, const double* p) const {
    switch (cfg.kind) {
      case DistributionKind::kNormal:
        return p[0] + p[1] * rng.normal();
      case DistributionKind::kStudentT: {
        const double x = rng.normal();
        return p[1] + p[2] * x / std::sqrt(2 * gamma_draw(rng, p[0] / 2) / p[0]);
      }
      case DistributionKind::kPoisson:
        return poisson_draw(rng, p[0]);
      case DistributionKind::kGmm:
        break;
    }
    const Index C = cfg.n_components;
    Index c = C - 1;
    if (cfg.weighted) {
      // The weights sum to 1 up to rounding: the last component takes what is left.
      double u = u01_open0(rng.next_u32());
      for (Index k = 0; k + 1 < C; ++k) {
        u -= p[2 * C + k];
        if (u <= 0) {
          c = k;
          break;
        }
      }
    } else {
      c = std::min(C - 1, Index(u01_open0(rng.next_u32()) * double(C)));
    }
    return p[c] + p[C + c] * rng.normal();
  }
};

}  // namespace

template <class T>
void sample_distribution(const DistributionConfig& cfg, ConstMat<T> params,
                         std::span<const double> quantiles, Index num_samples, uint64_t seed,
                         MatView<T> mean, MatView<T> quants) {
  const Index K = distribution_parameters(cfg), N = params.cols / K, Q = Index(quantiles.size());
  if (params.cols != K * N || mean.rows != params.rows || mean.cols != N ||
      quants.rows != params.rows || quants.cols != N * Q)
    throw Error("DistributionLoss: params [rows, K·N], mean [rows, N], quantiles [rows, N·Q]");
  if (num_samples < 1) throw Error("DistributionLoss: num_samples must be ≥ 1");
  RngStream rng(seed, 0x5A3D1E);
  const Sampler draw{cfg};
  std::vector<double> s(static_cast<size_t>(num_samples)), p(static_cast<size_t>(K));
  for (Index r = 0; r < params.rows; ++r)
    for (Index n = 0; n < N; ++n) {
      for (Index j = 0; j < K; ++j)
        p[size_t(j)] = double(params(r, distribution_column(cfg, N, n, j)));
      double sum = 0;
      for (double& v : s) {
        v = draw(rng, p.data());
        sum += v;
      }
      mean(r, n) = T(sum / double(num_samples));
      std::sort(s.begin(), s.end());
      for (Index k = 0; k < Q; ++k) {
        const double pos = quantiles[size_t(k)] * double(num_samples - 1);
        const auto lo = size_t(std::floor(pos));
        const size_t hi = std::min(lo + 1, s.size() - 1);
        quants(r, n * Q + k) = T(s[lo] + (s[hi] - s[lo]) * (pos - double(lo)));
      }
    }
}

template void sample_distribution<float>(const DistributionConfig&, ConstMat<float>,
                                         std::span<const double>, Index, uint64_t, MatView<float>,
                                         MatView<float>);
template void sample_distribution<double>(const DistributionConfig&, ConstMat<double>,
                                          std::span<const double>, Index, uint64_t, MatView<double>,
                                          MatView<double>);

}  // namespace shoal::layers
