// Losses on [N, F] predictions: the masked, weighted point losses of neuralforecast and
// PyTorch's BCE-with-logits. Each is a small struct: forward returns the scalar loss (double),
// backward overwrites the gradient w.r.t. the prediction, scaled by the upstream dloss.
//
// Point losses (MAE, MSE, Huber), with e = ŷ − y and W = mask · weight · col_weight:
//   L = Σ ℓ(e)·W / Σ W, and L = 0 (gradient 0) when that ratio is NaN or ±inf: an all-masked
//   batch, a zero weight sum, or a NaN anywhere in the sums (neuralforecast's _divide_no_nan).
//   MAE ℓ = |e|, ℓ' = sign(e) with sign(0) = 0 (as torch.abs).
//   MSE ℓ = e², ℓ' = 2e.
//   Huber (torch huber_loss) ℓ = ½e² if |e| < δ else δ(|e| − ½δ), ℓ' = clamp(e, −δ, δ).
//   ∂L/∂ŷ = dloss · ℓ'(e) · W / Σ W.
// BCE with logits z, target y, optional per-element weight w (torch mean reduction):
//   L = (1/(N·F)) Σ w·(max(z, 0) − z·y + log(1 + exp(−|z|)))   (stable for any |z|)
//   ∂L/∂z = dloss · w·(σ(z) − y) / (N·F).
// Shapes: ŷ, y, mask, weight, dŷ [N, F] (any leading dimensions); col_weight [F] (neuralforecast's
// horizon_weight on a [N, h] view). Sums accumulate in double. Derivations:
// docs/derivations/losses.md.
#pragma once

#include <cstdint>

#include "shoal/core/tensor.h"

namespace shoal::layers {

// Optional weights of a point loss; a view with data == nullptr (the default) means all ones.
template <class T>
struct LossWeights {
  ConstMat<T> mask;               // [N, F] 1 keeps an element, 0 drops it
  ConstMat<T> weight;             // [N, F] per-element weight
  const T* col_weight = nullptr;  // [F] per-column weight, broadcast over rows
};

enum class PointLossKind : uint8_t { kMae, kMse, kHuber };

// The masked weighted mean of an elementwise loss. backward uses the ratio of the last forward
// (to zero the gradient when it was not finite), so call it after forward on the same inputs.
template <class T>
struct PointLoss {
  struct Config {
    PointLossKind kind = PointLossKind::kMae;
    double delta = 1.0;  // Huber only
  };

  Config cfg;

  explicit PointLoss(Config c);
  double forward(ConstMat<T> pred, ConstMat<T> target, const LossWeights<T>& w = {});
  void backward(ConstMat<T> pred, ConstMat<T> target, MatView<T> dpred,
                const LossWeights<T>& w = {}, double dloss = 1.0) const;
  // One chunk of a batch whose Σ W is known beforehand (a batch trained a few rows at a time):
  // returns the chunk's Σ ℓ(e)·m and writes dŷ = scale · ℓ'(e) · m, with scale = 1 / Σ W of the
  // whole batch, so the chunks' gradients are exactly the whole batch's. mask may be empty.
  double chunk(ConstMat<T> pred, ConstMat<T> target, ConstMat<T> mask, MatView<T> dpred,
               T scale) const;
  // Whether the last forward's Σ ℓ·W was finite. forward returns 0 for a non-finite ratio (as
  // neuralforecast's _divide_no_nan does), which hides a diverged model; trainers ask this.
  bool numerator_finite() const { return num_finite_; }

 private:
  double inv_den_ = 0;  // 1 / Σ W of the last forward, 0 when its ratio was not finite
  bool num_finite_ = true;
};

// Σ of a mask's entries in double (a loss's denominator); a contiguous mask is summed as one
// run (rows of one series would otherwise pay a reduction's set-up per element).
template <class T>
double mask_sum(ConstMat<T> mask);

template <class T>
struct MaeLoss : PointLoss<T> {
  MaeLoss() : PointLoss<T>({.kind = PointLossKind::kMae}) {}
};
template <class T>
struct MseLoss : PointLoss<T> {
  MseLoss() : PointLoss<T>({.kind = PointLossKind::kMse}) {}
};
template <class T>
struct HuberLoss : PointLoss<T> {
  explicit HuberLoss(double delta = 1.0)
      : PointLoss<T>({.kind = PointLossKind::kHuber, .delta = delta}) {}
};

// torch.nn.functional.binary_cross_entropy_with_logits(z, y, weight, reduction="mean").
template <class T>
struct BceWithLogitsLoss {
  double forward(ConstMat<T> logits, ConstMat<T> target, ConstMat<T> weight = {}) const;
  void backward(ConstMat<T> logits, ConstMat<T> target, MatView<T> dlogits, ConstMat<T> weight = {},
                double dloss = 1.0) const;
};

}  // namespace shoal::layers
