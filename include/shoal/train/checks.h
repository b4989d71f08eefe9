// Checks every trainer shares: hyper-parameters named with their value, and training faults.
//
// Training faults: a trainer checks its step's loss (one scalar, every step); only when it is NaN
// or Inf does it scan its arenas to say where the non-finite values first appear, so the hot
// path pays one comparison per step.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "shoal/core/arena.h"

namespace shoal::train {

struct NonFiniteSite {
  // "parameter", "activation", "running statistic" or "gradient"; empty when all are finite
  std::string kind;
  std::string tensor;  // arena entry name, e.g. "mlp.1.weight"
  std::string layer;   // the entry name without its last component ("mlp.1")
};

// The first float arena entry holding a NaN or Inf, looking at parameters, then activations and
// running statistics (plan order is forward order, so the first one is where the values blew
// up), then gradients.
NonFiniteSite first_non_finite(std::span<const Arena* const> arenas);

// Throws shoal::Error "non-finite loss at step N (first non-finite K in layer 'L', tensor 'T')".
[[noreturn]] void throw_non_finite_loss(int64_t step, std::span<const Arena* const> arenas);

// Throws shoal::Error "field 'F': hyper-parameter out of range (expected E, got V)".
[[noreturn]] void hyper_parameter_out_of_range(const char* field, const std::string& expected,
                                               double got);

// learning_rate > 0 and finite, batch_size ≥ 1 (the MLP and NCF trainers; forecasting checks
// its job in train/forecast_job.cpp).
void check_lr_and_batch(double lr, int64_t batch_size);

}  // namespace shoal::train
