#include "shoal/data/scalers.h"

#include <algorithm>
#include <cmath>

#include "shoal/core/error.h"

namespace shoal::data {
namespace {

struct Named {
  const char* name;
  ScalerType type;
};
constexpr Named kNames[] = {
    {"identity", ScalerType::kIdentity}, {"standard", ScalerType::kStandard},
    {"robust", ScalerType::kRobust},     {"minmax", ScalerType::kMinmax},
    {"minmax1", ScalerType::kMinmax1},   {"invariant", ScalerType::kInvariant},
    {"revin", ScalerType::kRevin}};

// torch.nanmedian: the lower middle value.
double lower_median(float* v, Index k) {
  const Index mid = (k - 1) / 2;
  std::nth_element(v, v + mid, v + k);
  return v[mid];
}

double finish(double scale) {
  if (scale == 0.0) scale = 1.0;
  return scale + kScalerEps;
}

}  // namespace

ScalerType parse_scaler_type(std::string_view name) {
  for (const auto& n : kNames)
    if (name == n.name) return n.type;
  throw Error(
      fmt::format("unknown scaler type '{}'", name),
      ErrorContext{.field = "scaler_type",
                   .expected = "identity, standard, robust, minmax, minmax1, invariant or revin",
                   .actual = std::string(name)});
}

const char* scaler_name(ScalerType t) {
  for (const auto& n : kNames)
    if (n.type == t) return n.name;
  return "?";
}

ScaleStats scaler_statistics(ScalerType t, const float* x, Index stride, const float* mask,
                             Index mask_stride, Index n, float* scratch) {
  if (t == ScalerType::kIdentity) return {0.0f, 1.0f};
  Index k = 0;
  double sum = 0.0, lo = INFINITY, hi = -INFINITY;
  for (Index i = 0; i < n; ++i) {
    if (mask[i * mask_stride] < 1.0f) continue;
    const float v = x[i * stride];
    scratch[k++] = v;
    sum += v;
    lo = std::min<double>(lo, v);
    hi = std::max<double>(hi, v);
  }
  if (k == 0) return {0.0f, static_cast<float>(finish(0.0))};
  if (t == ScalerType::kMinmax || t == ScalerType::kMinmax1)
    return {static_cast<float>(lo), static_cast<float>(finish(hi - lo))};
  const double mean = sum / static_cast<double>(k);
  double ss = 0.0;
  for (Index i = 0; i < k; ++i) ss += (scratch[i] - mean) * (scratch[i] - mean);
  const double std_dev = std::sqrt(ss / static_cast<double>(k));
  if (t == ScalerType::kStandard || t == ScalerType::kRevin)
    return {static_cast<float>(mean), static_cast<float>(finish(std_dev))};
  // robust, invariant
  const double median = lower_median(scratch, k);
  for (Index i = 0; i < k; ++i) scratch[i] = std::fabs(static_cast<float>(scratch[i] - median));
  double mad = lower_median(scratch, k);
  if (mad == 0.0) mad = std_dev * 0.6744897501960817;
  return {static_cast<float>(median), static_cast<float>(finish(mad))};
}

void scale_strided(ScalerType t, float* x, Index stride, Index n, ScaleStats s) {
  if (t == ScalerType::kIdentity) return;
  for (Index i = 0; i < n; ++i) x[i * stride] = scale_value(t, x[i * stride], s);
}

void unscale_strided(ScalerType t, float* z, Index stride, Index n, ScaleStats s) {
  if (t == ScalerType::kIdentity) return;
  for (Index i = 0; i < n; ++i) z[i * stride] = unscale_value(t, z[i * stride], s);
}

}  // namespace shoal::data
