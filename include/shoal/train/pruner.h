// Successive halving for a hyper-parameter search, asynchronous (ASHA, as Optuna's
// SuccessiveHalvingPruner): trials report their validation loss at each check; at the rungs
// (check min_checks · reduction_factor^k) a trial goes on only while its loss is among the best
// 1/reduction_factor of the losses reported at that rung so far (the best one at least), so poor
// configurations stop after a fraction of their steps. Thread-safe: the trials of a search run
// side by side and share one pruner.
#pragma once

#include <mutex>
#include <vector>

#include "shoal/core/tensor.h"

namespace shoal::train {

class SuccessiveHalving {
 public:
  // min_checks ≥ 1 validation checks before the first rung; reduction_factor ≥ 2.
  SuccessiveHalving(Index min_checks, Index reduction_factor);

  // A trial's validation loss at its check number `check` (1-based): whether it goes on. Between
  // rungs, and for a non-finite loss at a rung (which then stops), nothing is recorded.
  bool keep(Index check, double loss);

  // The rung of check number `check`, or -1 when it is none.
  Index rung_of(Index check) const;

 private:
  Index min_checks_, factor_;
  std::mutex mu_;
  std::vector<std::vector<double>> rungs_;  // the losses reported at each rung
};

}  // namespace shoal::train
