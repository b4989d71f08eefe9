#include "shoal/kernels/isa.h"

#include <hwy/targets.h>

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <string>

#include "shoal/core/error.h"

namespace shoal::kernels {

namespace {

// Highway's targets for each path. AVX3 is AVX-512 F, VL, DQ and BW; Highway checks the CPU
// and that the OS saves the registers. The sse4 path is Highway's SSSE3 target compiled in the
// x86-64-v2 (SSE4.2) translation units: Highway's own SSE4 target also requires AES and CLMUL,
// which Nehalem-class CPUs lack, so it is not built (HWY_DISABLED_TARGETS in CMakeLists.txt).
int64_t hwy_target(Isa isa) {
  switch (isa) {
    case Isa::kSse4:
      return HWY_SSSE3;
    case Isa::kAvx2:
      return HWY_AVX2;
    case Isa::kAvx512:
      return HWY_AVX3;
    case Isa::kNeon:
      return HWY_NEON;
  }
  return HWY_STATIC_TARGET;
}

// Every target wider than `isa`'s (the ones to switch off to narrow the path to it).
int64_t wider_than(Isa isa) {
  const int64_t t = hwy_target(isa);
  return t - 1;  // Highway numbers better targets lower
}

// This architecture's paths, narrowest first.
#if HWY_ARCH_X86
constexpr Isa kAll[] = {Isa::kSse4, Isa::kAvx2, Isa::kAvx512};
#elif HWY_ARCH_ARM_A64
constexpr Isa kAll[] = {Isa::kNeon};
#else
#error "shoal's kernels have paths for x86-64 and aarch64"
#endif

struct State {
  Isa active = kAll[0];
  bool narrowed = false;
};

std::string all_names() {
  std::string s;
  for (Isa isa : kAll) s += (s.empty() ? "" : ", ") + std::string(isa_name(isa));
  return s;
}

State& state() {
  static State s;
  return s;
}

Isa parse_isa(const char* v) {
  for (Isa isa : kAll)
    if (std::strcmp(v, isa_name(isa)) == 0) return isa;
  throw Error(
      fmt::format("SHOAL_ISA={}: unknown instruction set (expected one of: {})", v, all_names()));
}

void settle() {
  State& s = state();
  s.active = widest_isa();
  const char* v = std::getenv("SHOAL_ISA");
  if (v != nullptr && *v != '\0') {
    const Isa want = parse_isa(v);
    SHOAL_CHECK(isa_supported(want), "SHOAL_ISA={}: this CPU does not run {} (widest: {})", v,
                isa_name(want), isa_name(widest_isa()));
    s.narrowed = want != s.active;
    s.active = want;
  }
  hwy::DisableTargets(wider_than(s.active));
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kSse4:
      return "sse4";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
    case Isa::kNeon:
      return "neon";
  }
  return "?";
}

int isa_float_lanes(Isa isa) {
  return isa == Isa::kAvx512 ? 16 : isa == Isa::kAvx2 ? 8 : 4;
}

bool isa_supported(Isa isa) {
  // DisableTargets narrows what SupportedTargets reports, so the CPU is asked directly once.
  static const int64_t cpu = [] {
    hwy::DisableTargets(0);
    return hwy::SupportedTargets();
  }();
  return (cpu & hwy_target(isa)) != 0;
}

Isa widest_isa() {
  Isa best = kAll[0];
  for (Isa isa : kAll)
    if (isa_supported(isa)) best = isa;
  return best;
}

Isa active_isa() {
  static std::once_flag once;
  std::call_once(once, settle);
  return state().active;
}

bool isa_narrowed() {
  active_isa();
  return state().narrowed;
}

std::string describe_isa() {
  const Isa isa = active_isa();
  const std::string head =
      fmt::format("isa: {}, {} float lanes", isa_name(isa), isa_float_lanes(isa));
  if (isa_narrowed())
    return head + fmt::format(" (SHOAL_ISA; this CPU runs up to {})", isa_name(widest_isa()));
  if (std::size(kAll) == 1) return head + " (the only path of this architecture)";
  return head + " (the widest this CPU runs; SHOAL_ISA=sse4|avx2|avx512 narrows it)";
}

ScopedIsa::ScopedIsa(Isa isa) : previous_(active_isa()) {
  SHOAL_CHECK(isa_supported(isa), "this CPU does not run {}", isa_name(isa));
  state().active = isa;
  hwy::DisableTargets(wider_than(isa));
}

ScopedIsa::~ScopedIsa() {
  state().active = previous_;
  hwy::DisableTargets(wider_than(previous_));
}

}  // namespace shoal::kernels
