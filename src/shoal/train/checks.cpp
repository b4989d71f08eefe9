#include "shoal/train/checks.h"

#include <cmath>

#include "shoal/core/error.h"
#include "shoal/core/options.h"

namespace shoal::train {
namespace {

bool all_finite(const float* p, Index n) {
  // The fault path only: a plain loop is fine (the step loop never calls this).
  for (Index i = 0; i < n; ++i)
    if (!std::isfinite(p[i])) return false;
  return true;
}

const char* kind_of(Region r) {
  switch (r) {
    case Region::kParams:
      return "parameter";
    case Region::kState:
      return "running statistic";
    case Region::kActivations:
      return "activation";
    default:
      return "gradient";
  }
}

}  // namespace

NonFiniteSite first_non_finite(std::span<const Arena* const> arenas) {
  // Parameters first (a bad update), then what the forward computed (activations and running
  // statistics, in plan order, which is forward order), then gradients (the backward's
  // consequence).
  struct Pass {
    Region regions[2];
  };
  constexpr Pass kPasses[] = {{{Region::kParams, Region::kParams}},
                              {{Region::kActivations, Region::kState}},
                              {{Region::kGrads, Region::kActivationGrads}}};
  for (const Pass& pass : kPasses)
    for (const Arena* arena : arenas)
      for (const ArenaEntry& e : arena->entries()) {
        if (e.elem_size != sizeof(float) ||
            (e.region != pass.regions[0] && e.region != pass.regions[1]))
          continue;
        const auto* p =
            reinterpret_cast<const float*>(arena->region_base(e.region) + e.offset_bytes);
        if (all_finite(p, e.shape.numel())) continue;
        const size_t dot = e.name.rfind('.');
        return {kind_of(e.region), e.name,
                dot == std::string::npos ? e.name : e.name.substr(0, dot)};
      }
  return {};
}

void throw_non_finite_loss(int64_t step, std::span<const Arena* const> arenas) {
  const NonFiniteSite site = first_non_finite(arenas);
  const std::string where =
      site.kind.empty() ? std::string("all parameters, activations and gradients are finite")
                        : fmt::format("first non-finite {} in layer '{}', tensor '{}'", site.kind,
                                      site.layer, site.tensor);
  throw Error(fmt::format("non-finite loss at step {} ({})", step, where));
}

void hyper_parameter_out_of_range(const char* field, const std::string& expected, double got) {
  option_out_of_range(field, expected, got);
}

void check_lr_and_batch(double lr, int64_t batch_size) {
  if (!(lr > 0) || !std::isfinite(lr))
    hyper_parameter_out_of_range("learning_rate", "a finite number > 0", lr);
  if (batch_size < 1)
    hyper_parameter_out_of_range("batch_size", "an integer ≥ 1", double(batch_size));
}

}  // namespace shoal::train
