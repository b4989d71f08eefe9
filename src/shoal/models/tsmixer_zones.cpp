// TSMixer's profiler zones and their analytic costs (profile/cost.h conventions), per window:
// a zone's rows are the batch's windows b. A block's temporal half is BatchNorm over (N·L)
// features, a time-wise Linear L → L + ReLU on b·N columns, dropout and the residual add; its
// feature half is BatchNorm over (L·N), Linear N → K + ReLU, dropout, Linear K → N, dropout and
// the residual add, on b·L rows. Transposes are data movement (bytes, no FLOPs; not counted).
#include "shoal/models/tsmixer.h"
#include "shoal/profile/cost.h"

namespace shoal::models {

template <class T>
void TSMixer<T>::register_zones(profile::Recorder& rec, int model) {
  using profile::ActKind;
  using profile::AffineCost;
  using profile::Category;
  namespace p = profile;
  const double e = sizeof(T), h = double(cfg_.h), l = double(cfg_.input_size),
               n = double(cfg_.n_series), k = double(cfg_.ff_dim);
  auto both = [&](const std::string& name, auto fwd, auto bwd) {
    return p::LayerZones{
        rec.zone(name + ".forward", Category::kForward, AffineCost::of(fwd), model),
        rec.zone(name + ".backward", Category::kBackward, AffineCost::of(bwd), model)};
  };
  for (size_t j = 0; j < blocks_.size(); ++j) {
    const std::string pre = "mixing_layers." + std::to_string(j) + ".";
    blocks_[j].temporal_zones = both(
        pre + "temporal_mixer",
        [&](double b) {
          return p::batch_norm_forward(b, n * l, true, e) +
                 p::linear_forward(b * n, l, l, true, ActKind::kRelu, e) + p::dropout(b * l, n, e) +
                 p::elementwise(b * l, n, 1, 2, e);
        },
        [&](double b) {
          return p::elementwise(b * l, n, 1, 2, e) + p::dropout(b * l, n, e) +
                 p::linear_backward_dw(b * n, l, l, true, e) +
                 p::linear_backward_dx(b * n, l, l, ActKind::kRelu, e) +
                 p::batch_norm_backward_dx(b, n * l, e) +
                 p::batch_norm_backward_dw(b, n * l, true, e);
        });
    blocks_[j].feature_zones = both(
        pre + "feature_mixer",
        [&](double b) {
          return p::batch_norm_forward(b, l * n, true, e) +
                 p::linear_forward(b * l, n, k, true, ActKind::kRelu, e) + p::dropout(b * l, k, e) +
                 p::linear_forward(b * l, k, n, true, ActKind::kNone, e) + p::dropout(b * l, n, e) +
                 p::elementwise(b * l, n, 1, 2, e);
        },
        [&](double b) {
          return p::dropout(b * l, n, e) + p::linear_backward_dw(b * l, k, n, true, e) +
                 p::linear_backward_dx(b * l, k, n, ActKind::kNone, e) + p::dropout(b * l, k, e) +
                 p::linear_backward_dw(b * l, n, k, true, e) +
                 p::linear_backward_dx(b * l, n, k, ActKind::kRelu, e) +
                 p::batch_norm_backward_dx(b, l * n, e) +
                 p::batch_norm_backward_dw(b, l * n, true, e);
        });
  }
  // RevIN statistics and normalise (8 FLOPs/element), the inverse 4; backward the affine grads.
  norm_zones_ = both(
      "norm", [&](double b) { return p::elementwise(b * l, n, 8, 1, e); },
      [&](double b) { return p::elementwise(b * l, n, 2, 2, e); });
  norm_inverse_zones_ = both(
      "norm.inverse", [&](double b) { return p::elementwise(b * h, n, 4, 1, e); },
      [&](double b) { return p::elementwise(b * h, n, 4, 2, e); });
  // The head: a time-wise Linear L → H on b·N columns.
  out_zones_ = both(
      "out", [&](double b) { return p::linear_forward(b * n, l, h, true, ActKind::kNone, e); },
      [&](double b) {
        return p::linear_backward_dw(b * n, l, h, true, e) +
               p::linear_backward_dx(b * n, l, h, ActKind::kNone, e);
      });
}

template void TSMixer<float>::register_zones(profile::Recorder&, int);
template void TSMixer<double>::register_zones(profile::Recorder&, int);

}  // namespace shoal::models
