// Sampling predictions from a fitted Normal or StudentT (layers/multi_output_losses.h).
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

}  // namespace

template <class T>
void sample_distribution(DistributionKind kind, ConstMat<T> params,
                         std::span<const double> quantiles, Index num_samples, uint64_t seed,
                         MatView<T> mean, MatView<T> quants) {
  const Index K = distribution_parameters(kind), N = params.cols / K, Q = Index(quantiles.size());
  if (params.cols != K * N || mean.rows != params.rows || mean.cols != N ||
      quants.rows != params.rows || quants.cols != N * Q)
    throw Error("DistributionLoss: params [rows, K·N], mean [rows, N], quantiles [rows, N·Q]");
  if (num_samples < 1) throw Error("DistributionLoss: num_samples must be ≥ 1");
  const bool t = kind == DistributionKind::kStudentT;
  RngStream rng(seed, 0x5A3D1E);
  std::vector<double> s(static_cast<size_t>(num_samples));
  for (Index r = 0; r < params.rows; ++r)
    for (Index n = 0; n < N; ++n) {
      const double nu = t ? double(params(r, n)) : 0;
      const double mu = double(params(r, (t ? 1 : 0) * N + n));
      const double sd = double(params(r, (t ? 2 : 1) * N + n));
      double sum = 0;
      for (double& v : s) {
        const double x = rng.normal();
        v = t ? mu + sd * x / std::sqrt(2 * gamma_draw(rng, nu / 2) / nu) : mu + sd * x;
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

template void sample_distribution<float>(DistributionKind, ConstMat<float>, std::span<const double>,
                                         Index, uint64_t, MatView<float>, MatView<float>);
template void sample_distribution<double>(DistributionKind, ConstMat<double>,
                                          std::span<const double>, Index, uint64_t, MatView<double>,
                                          MatView<double>);

}  // namespace shoal::layers
