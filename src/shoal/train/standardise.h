// Internal to src/shoal/train: the column standardisation of the MLP trainers, shared so that a
// fused lane (lanes_mlp_trainer.cpp) standardises its data exactly as a lone fit does.
#pragma once

#include <cmath>
#include <vector>

#include "shoal/core/tensor.h"

namespace shoal::train::detail {

// Column means and (population) standard deviations; a constant column gets std 1.
inline void column_stats(ConstMat<double> m, std::vector<double>& mean,
                         std::vector<double>& stdev) {
  mean.assign(static_cast<size_t>(m.cols), 0.0);
  stdev.assign(static_cast<size_t>(m.cols), 0.0);
  for (Index r = 0; r < m.rows; ++r)
    for (Index c = 0; c < m.cols; ++c) mean[static_cast<size_t>(c)] += m(r, c);
  for (auto& v : mean) v /= static_cast<double>(m.rows);
  for (Index r = 0; r < m.rows; ++r)
    for (Index c = 0; c < m.cols; ++c) {
      const double d = m(r, c) - mean[static_cast<size_t>(c)];
      stdev[static_cast<size_t>(c)] += d * d;
    }
  for (auto& v : stdev) {
    v = std::sqrt(v / static_cast<double>(m.rows));
    if (!(v > 1e-12)) v = 1.0;
  }
}

inline void standardise(ConstMat<double> m, const std::vector<double>& mean,
                        const std::vector<double>& stdev, float* out) {
  for (Index r = 0; r < m.rows; ++r)
    for (Index c = 0; c < m.cols; ++c)
      out[r * m.cols + c] = static_cast<float>((m(r, c) - mean[static_cast<size_t>(c)]) /
                                               stdev[static_cast<size_t>(c)]);
}

}  // namespace shoal::train::detail
