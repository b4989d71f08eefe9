#include "shoal/train/pruner.h"

#include <algorithm>
#include <cmath>

#include "shoal/core/error.h"

namespace shoal::train {

SuccessiveHalving::SuccessiveHalving(Index min_checks, Index reduction_factor)
    : min_checks_(min_checks), factor_(reduction_factor) {
  SHOAL_CHECK(min_checks >= 1, "successive halving needs min_checks ≥ 1, got {}", min_checks);
  SHOAL_CHECK(reduction_factor >= 2, "successive halving needs reduction_factor ≥ 2, got {}",
              reduction_factor);
}

Index SuccessiveHalving::rung_of(Index check) const {
  Index rung = 0;
  for (Index at = min_checks_; at <= check; at *= factor_, ++rung)
    if (at == check) return rung;
  return -1;
}

bool SuccessiveHalving::keep(Index check, double loss) {
  const Index rung = rung_of(check);
  if (rung < 0) return true;
  if (!std::isfinite(loss)) return false;
  const std::lock_guard<std::mutex> lock(mu_);
  if (Index(rungs_.size()) <= rung) rungs_.resize(size_t(rung + 1));
  std::vector<double>& seen = rungs_[size_t(rung)];
  seen.push_back(loss);
  // Promotable: within the best max(1, n / factor) of the n losses at this rung, itself included.
  const size_t k = std::max<size_t>(1, seen.size() / size_t(factor_));
  std::vector<double> sorted = seen;
  std::nth_element(sorted.begin(), sorted.begin() + Index(k - 1), sorted.end());
  return loss <= sorted[k - 1];
}

}  // namespace shoal::train
