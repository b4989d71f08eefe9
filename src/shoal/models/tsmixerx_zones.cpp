// TSMixerx's profiler zones and their analytic costs (profile/cost.h conventions), per window:
// a zone's rows are the batch's windows B, so every cost below is written for b windows and
// AffineCost::of splits it into a per-window and a fixed (parameter) part. Row counts of the
// feature-wise layers are b·H; time-wise Linears act on b·C columns of length L or H.
#include <fmt/format.h>

#include "shoal/models/tsmixerx.h"
#include "shoal/profile/cost.h"

namespace shoal::models {
namespace {

using profile::ActKind;
using profile::Cost;

// FeatureMixingX(in → out, ff K) on n rows: lin1 + ReLU, dropout, lin2, dropout, residual
// (projected when in ≠ out), LayerNorm over (H, out).
Cost feature_mixing_forward(double n, double in, double out, double k, bool drop, double e) {
  Cost c = profile::linear_forward(n, in, k, true, ActKind::kRelu, e) +
           profile::linear_forward(n, k, out, true, ActKind::kNone, e) +
           profile::elementwise(n, out, 1, 2, e) + profile::layer_norm_forward(n, out, true, e);
  if (drop) c += profile::dropout(n, k, e) + profile::dropout(n, out, e);
  if (in != out) c += profile::linear_forward(n, in, out, true, ActKind::kNone, e);
  return c;
}
Cost feature_mixing_backward(double n, double in, double out, double k, bool drop, bool dx,
                             double e) {
  Cost c = profile::layer_norm_backward_dx(n, out, e) +
           profile::layer_norm_backward_dw(n, out, true, e) +
           profile::linear_backward_dw(n, k, out, true, e) +
           profile::linear_backward_dx(n, k, out, ActKind::kNone, e) +
           profile::linear_backward_dw(n, in, k, true, e);
  if (drop) c += profile::dropout(n, k, e) + profile::dropout(n, out, e);
  if (dx) c += profile::linear_backward_dx(n, in, k, ActKind::kRelu, e);
  if (in != out) {
    c += profile::linear_backward_dw(n, in, out, true, e);
    if (dx) c += profile::linear_backward_dx(n, in, out, ActKind::kNone, e);
  }
  return c;
}

// TemporalMixingX(C) on b windows of H rows: a time-wise Linear H → H (+ ReLU) over b·C
// columns, dropout, residual add, LayerNorm over (H, C).
Cost temporal_mixing_forward(double b, double h, double c, bool drop, double e) {
  Cost r = profile::linear_forward(b * c, h, h, true, ActKind::kRelu, e) +
           profile::elementwise(b * h, c, 1, 2, e) + profile::layer_norm_forward(b * h, c, true, e);
  if (drop) r += profile::dropout(b * h, c, e);
  return r;
}
Cost temporal_mixing_backward(double b, double h, double c, bool drop, double e) {
  Cost r = profile::layer_norm_backward_dx(b * h, c, e) +
           profile::layer_norm_backward_dw(b * h, c, true, e) +
           profile::linear_backward_dw(b * c, h, h, true, e) +
           profile::linear_backward_dx(b * c, h, h, ActKind::kRelu, e) +
           profile::elementwise(b * h, c, 1, 2, e);
  if (drop) r += profile::dropout(b * h, c, e);
  return r;
}

}  // namespace

template <class T>
void TSMixerx<T>::register_zones(profile::Recorder& rec, int model) {
  using profile::AffineCost;
  using profile::Category;
  const double e = sizeof(T), h = double(cfg_.h), l = double(cfg_.input_size),
               n = double(cfg_.n_series), k = double(cfg_.ff_dim),
               c0n = double(c0() * cfg_.n_series);
  const bool drop = cfg_.dropout > 0;
  auto both = [&](const std::string& name, auto fwd, auto bwd) {
    return profile::LayerZones{
        rec.zone(name + ".forward", Category::kForward, AffineCost::of(fwd), model),
        rec.zone(name + ".backward", Category::kBackward, AffineCost::of(bwd), model)};
  };
  // RevIN statistics (mean, variance: 4 FLOPs/element) and normalise + affine (4), plus the
  // packing of y and exogenous channels into the projection input; backward: the affine grads.
  zones_.norm = both(
      "norm", [&](double b) { return profile::elementwise(b * l, c0n, 8, 1, e); },
      [&](double b) { return profile::elementwise(b * l, n, 2, 2, e); });
  zones_.norm_inverse = both(
      "norm.inverse", [&](double b) { return profile::elementwise(b * h, n, 4, 1, e); },
      [&](double b) { return profile::elementwise(b * h, n, 4, 2, e); });
  zones_.projection = both(
      "temporal_projection",
      [&](double b) { return profile::linear_forward(b * c0n, l, h, true, ActKind::kNone, e); },
      [&](double b) {
        Cost c = profile::linear_backward_dw(b * c0n, l, h, true, e);
        if (cfg_.revin) c += profile::linear_backward_dx(b * c0n, l, h, ActKind::kNone, e);
        return c;
      });
  auto fm = [&](const std::string& name, double in, bool dx) {
    return both(
        name, [&, in](double b) { return feature_mixing_forward(b * h, in, k, k, drop, e); },
        [&, in, dx](double b) { return feature_mixing_backward(b * h, in, k, k, drop, dx, e); });
  };
  zones_.fm_hist = fm("feature_mixer_hist", c0n, true);
  const double ns = n * double(cfg_.stat_exog_size);
  if (fm_futr_) zones_.fm_futr = fm("feature_mixer_futr", n * double(cfg_.futr_exog_size), false);
  if (fm_stat_) zones_.fm_stat = fm("feature_mixer_stat", ns, false);
  zones_.mixers.assign(mixers_.size(), {});
  for (size_t j = 0; j < mixers_.size(); ++j) {
    const std::string p = mixer_prefix(j);
    const double cols = double(mixers_[j].cols);
    if (mixers_[j].stat) zones_.mixers[j].stat = fm(p + "feature_mixer_stat", ns, false);
    zones_.mixers[j].temporal = both(
        p + "temporal_mixer",
        [&, cols](double b) { return temporal_mixing_forward(b, h, cols, drop, e); },
        [&, cols](double b) { return temporal_mixing_backward(b, h, cols, drop, e); });
    zones_.mixers[j].feature = both(
        p + "feature_mixer",
        [&, cols](double b) { return feature_mixing_forward(b * h, cols, k, k, drop, e); },
        [&, cols](double b) { return feature_mixing_backward(b * h, cols, k, k, drop, true, e); });
  }
  zones_.out = both(
      "out",
      [&](double b) { return profile::linear_forward(b * h, k, n, true, ActKind::kNone, e); },
      [&](double b) {
        return profile::linear_backward_dw(b * h, k, n, true, e) +
               profile::linear_backward_dx(b * h, k, n, ActKind::kNone, e);
      });
}

template void TSMixerx<float>::register_zones(profile::Recorder&, int);
template void TSMixerx<double>::register_zones(profile::Recorder&, int);

}  // namespace shoal::models
