// neuralforecast's temporal scalers (TemporalNorm over time, common/_scalers.py), one window
// and one channel of one series at a time. Statistics come from the values whose mask is 1
// (the L insample steps: neuralforecast zeroes the horizon's mask first); the transform is then
// applied to every value of the window, padding and horizon included.
//
//   type       shift            scale (then: 0 → 1, then + eps, eps = 1e-6)
//   identity   0                1 (no eps)
//   standard   masked mean      sqrt(masked mean of (x − mean)²)   (biased)
//   revin      as standard      (the learned affine of RevIN belongs to the model)
//   robust     masked median    masked median of |x − median|; if 0, 0.6744897501960817·std
//   invariant  as robust        z = asinh((x − shift) / scale)
//   minmax     masked min       max − min                          z ∈ [0, 1]
//   minmax1    as minmax        z = 2·(x − min)/scale − 1          z ∈ [−1, 1]
// The median is torch's: the lower of the two middle values for an even count. With no masked
// value at all, every type gives shift 0, scale 1 + eps (neuralforecast's minmax gives NaN
// there; shoal deliberately does not). Statistics accumulate in double, values are float.
#pragma once

#include <cstdint>
#include <string_view>

#include "shoal/core/tensor.h"

namespace shoal::data {

enum class ScalerType : uint8_t {
  kIdentity,
  kStandard,
  kRobust,
  kMinmax,
  kMinmax1,
  kInvariant,
  kRevin
};

inline constexpr double kScalerEps = 1e-6;

// "identity", "standard", ...; throws shoal::Error naming the accepted values.
ScalerType parse_scaler_type(std::string_view name);
const char* scaler_name(ScalerType t);

struct ScaleStats {
  float shift = 0.0f;
  float scale = 1.0f;
};

// Statistics of x[i·stride], i < n, over the entries with mask[i·stride] ≥ 1 (mask may use a
// different stride: mask_stride). `scratch` holds at least n floats (for the medians).
ScaleStats scaler_statistics(ScalerType t, const float* x, Index stride, const float* mask,
                             Index mask_stride, Index n, float* scratch);

inline float scale_value(ScalerType t, float x, ScaleStats s);
inline float unscale_value(ScalerType t, float z, ScaleStats s);

// In place over x[i·stride], i < n.
void scale_strided(ScalerType t, float* x, Index stride, Index n, ScaleStats s);
void unscale_strided(ScalerType t, float* z, Index stride, Index n, ScaleStats s);

}  // namespace shoal::data

#include <cmath>

namespace shoal::data {

inline float scale_value(ScalerType t, float x, ScaleStats s) {
  switch (t) {
    case ScalerType::kIdentity:
      return x;
    case ScalerType::kInvariant:
      return std::asinh((x - s.shift) / s.scale);
    case ScalerType::kMinmax1:
      return (x - s.shift) / s.scale * 2.0f - 1.0f;
    default:
      return (x - s.shift) / s.scale;
  }
}

inline float unscale_value(ScalerType t, float z, ScaleStats s) {
  switch (t) {
    case ScalerType::kIdentity:
      return z;
    case ScalerType::kInvariant:
      return std::sinh(z) * s.scale + s.shift;
    case ScalerType::kMinmax1:
      return (z + 1.0f) / 2.0f * s.scale + s.shift;
    default:
      return z * s.scale + s.shift;
  }
}

}  // namespace shoal::data
