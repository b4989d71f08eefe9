// BCE-with-logits forward and backward in one pass over a column of logits (one logit per
// instance: the NCF models' loss). layers::BceWithLogitsLoss, the loss layer, calls libm's exp
// and log1p per element in two passes (≈ 40 ns per instance, several percent of an NCF step);
// here exp and log1p are short polynomials, a vector of lanes at a time.
//   loss_n = max(z, 0) − z·y + log1p(e),   e = exp(−|z|) ∈ (0, 1]
//   σ(z)   = 1 / (1 + e) for z ≥ 0, e / (1 + e) otherwise (no overflow for any z)
//   dz_n   = scale · (σ(z_n) − y_n)
// exp(x), x ≤ 0: 2^k · p(r) with x = k·ln2 + r, |r| ≤ ln2/2 (Cephes' expf polynomial);
// arguments below −87 give exp(−87) ≈ 1.6e-38. log1p(e), e ∈ [0, 1]: 2·atanh(s), s = e / (2 +
// e), by its odd series to s^17. Every row, a column's tail included (a zero-padded copy),
// goes through the lanes, so a row's loss and dz do not depend on where it sits in the column.
// Accuracy: a few float ulps against libm (tests/train/ncf_trainer_test.cpp).
// Legend: N rows.
#pragma once

#include "shoal/core/tensor.h"

namespace shoal::kernels {

// Returns Σ_n loss_n (summed in double, in row order) and writes dz. z, y, dz: [N] contiguous.
double bce_logits(const float* z, const float* y, float* dz, Index n, float scale);
// The plain twin: the same polynomials one row at a time; the
// lanes may round a product and an add once more or less (a few ulps at most).
double bce_logits_ref(const float* z, const float* y, float* dz, Index n, float scale);

}  // namespace shoal::kernels
