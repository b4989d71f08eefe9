// Gradient checking by double-precision central differences.
//
// The scalar checked is L = Σ_o Σ_i out_o[i] · r_o[i] for fixed random r (a random projection
// exercises every output element). Analytic gradients come from one backward with dy = r;
// numeric ones from (L(v + ε) − L(v − ε)) / 2ε per element of every variable. The error of a
// variable is max|analytic − numeric| / max(max|numeric|, 1e-3): relative to the gradient's
// scale, so tiny entries do not blow up the ratio.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "shoal/core/rng.h"
#include "step_scale.h"

namespace shoal::testing {

struct GradVar {
  std::string name;
  double* value;
  double* grad;  // where backward leaves dL/dvalue
  int64_t n;
  bool grad_accumulates;  // parameter grads accumulate: the check zeroes them first
};

struct GradOut {
  double* value;
  double* dy;  // filled with r before backward
  int64_t n;
};

struct GradcheckResult {
  double max_rel_error = 0;
  std::string worst;  // "name[i]: analytic a, numeric n"
};

inline GradcheckResult gradcheck(const std::vector<GradVar>& vars, const std::vector<GradOut>& outs,
                                 const std::function<void()>& forward,
                                 const std::function<void()>& backward, double eps = 1e-6,
                                 uint64_t seed = 7) {
  RngStream rng(seed, 99);
  std::vector<std::vector<double>> r(outs.size());
  for (size_t o = 0; o < outs.size(); ++o)
    for (int64_t i = 0; i < outs[o].n; ++i) r[o].push_back(rng.uniform(-1.f, 1.f));
  auto loss = [&] {
    forward();
    double l = 0;
    for (size_t o = 0; o < outs.size(); ++o)
      for (int64_t i = 0; i < outs[o].n; ++i) l += outs[o].value[i] * r[o][static_cast<size_t>(i)];
    return l;
  };

  forward();
  for (size_t o = 0; o < outs.size(); ++o)
    for (int64_t i = 0; i < outs[o].n; ++i) outs[o].dy[i] = r[o][static_cast<size_t>(i)];
  for (const auto& v : vars)
    if (v.grad_accumulates) std::fill(v.grad, v.grad + v.n, 0.0);
  backward();
  std::vector<std::vector<double>> analytic;
  for (const auto& v : vars) analytic.emplace_back(v.grad, v.grad + v.n);

  // Under the sanitizers (support/step_scale.h: k) every k-th element of each variable, and its
  // last, is perturbed: the same code paths for the sanitizers to watch, in a k-th of the
  // forwards; the release run checks every element.
  const int64_t stride = step_scale();
  auto checked = [&](int64_t i, int64_t n) { return i % stride == 0 || i == n - 1; };
  GradcheckResult res;
  for (size_t k = 0; k < vars.size(); ++k) {
    const auto& v = vars[k];
    std::vector<double> numeric(static_cast<size_t>(v.n));
    double scale = 1e-3;
    for (int64_t i = 0; i < v.n; ++i) {
      if (!checked(i, v.n)) continue;
      const double saved = v.value[i];
      v.value[i] = saved + eps;
      const double lp = loss();
      v.value[i] = saved - eps;
      const double lm = loss();
      v.value[i] = saved;
      numeric[static_cast<size_t>(i)] = (lp - lm) / (2 * eps);
      scale = std::max(scale, std::abs(numeric[static_cast<size_t>(i)]));
    }
    for (int64_t i = 0; i < v.n; ++i) {
      if (!checked(i, v.n)) continue;
      const double a = analytic[k][static_cast<size_t>(i)];
      const double nn = numeric[static_cast<size_t>(i)];
      const double rel = std::abs(a - nn) / scale;
      if (rel > res.max_rel_error) {
        res.max_rel_error = rel;
        res.worst = v.name + "[" + std::to_string(i) + "]: analytic " + std::to_string(a) +
                    ", numeric " + std::to_string(nn);
      }
    }
  }
  return res;
}

// Fills with U(lo, hi) from a Philox stream: reproducible test data.
template <class T>
inline void fill_uniform(T* p, int64_t n, uint64_t seed, double lo = -1, double hi = 1) {
  RngStream rng(seed, 1);
  for (int64_t i = 0; i < n; ++i)
    p[i] = static_cast<T>(lo + (hi - lo) * static_cast<double>(rng.uniform()));
}

}  // namespace shoal::testing
