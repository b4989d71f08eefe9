#include "shoal/core/rng.h"

#include <numbers>

namespace shoal {

uint32_t RngStream::next_u32() {
  if (mt_) return static_cast<uint32_t>((*mt_)());
  if (used_ == 4) {
    buf_ = philox_.block(counter_++, 0);
    used_ = 0;
  }
  return buf_[static_cast<size_t>(used_++)];
}

double RngStream::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_normal_;
  }
  const double u1 = u01_open0(next_u32());
  const double u2 = u01_open0(next_u32());
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double t = 2.0 * std::numbers::pi * u2;
  spare_normal_ = r * std::sin(t);
  has_spare_ = true;
  return r * std::cos(t);
}

uint32_t RngStream::below(uint32_t n) {
  return uniform_below(n, [this] { return next_u32(); });
}

}  // namespace shoal
