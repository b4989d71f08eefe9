// PyTorch's default initialisation of nn.Linear, its bounds computed as torch computes them (in
// double, then cast to the float tensor's type), so that a Generator::kTorchCpu stream draws
// torch's weights bit for bit. The two bounds agree with 1/√fan_in up to the last float bit,
// and that bit differs for many fan_in (6, 7, 17, 18, …).
#pragma once

#include <cmath>
#include <type_traits>

#include "shoal/core/rng.h"
#include "shoal/core/tensor.h"

namespace shoal::layers {

// kaiming_uniform_(W, a=√5): bound = √3 · gain / √fan_in with gain = √(2 / (1 + a²)).
inline float kaiming_uniform_bound(Index fan_in) {
  const double a = std::sqrt(5.0);
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  return static_cast<float>(std::sqrt(3.0) * (gain / std::sqrt(static_cast<double>(fan_in))));
}

// nn.Linear's bias: U(±1/√fan_in).
inline float linear_bias_bound(Index fan_in) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(fan_in)));
}

// values ~ U(-bound, bound) in storage order (torch's uniform_ on a contiguous tensor).
template <class Range>
void fill_uniform(Range&& values, float bound, RngStream& rng) {
  for (auto& v : values)
    v = static_cast<std::remove_reference_t<decltype(v)>>(rng.uniform(-bound, bound));
}

}  // namespace shoal::layers
