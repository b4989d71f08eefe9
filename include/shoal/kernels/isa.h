// The instruction set the hand-written kernels run on, chosen once per process at run time.
//
// On x86-64 the library is compiled for x86-64-v2 (SSE4.2); every SIMD kernel is compiled for
// SSE4, AVX2 and AVX-512 (Highway's dynamic dispatch) and the widest the CPU supports runs.
// SHOAL_ISA (sse4, avx2, avx512) narrows the whole process for tests and comparisons: the
// kernels, the JIT target of libxsmm and the core type shoal gives OpenBLAS (unless
// OPENBLAS_CORETYPE or LIBXSMM_TARGET were set by the user). On 64-bit Arm there is one path,
// NEON (SHOAL_ISA=neon is accepted, the x86 names are not).
#pragma once

#include <cstdint>
#include <string>

namespace shoal::kernels {

// x86 paths in order of width; kNeon is aarch64's only path.
enum class Isa : uint8_t { kSse4, kAvx2, kAvx512, kNeon };

// Lower-case names as SHOAL_ISA spells them: "sse4", "avx2", "avx512", "neon".
const char* isa_name(Isa isa);
// float lanes of one vector on that path: 4, 8, 16, 4.
int isa_float_lanes(Isa isa);
// Whether this CPU (and the OS, which must save the wider registers) runs the path: false for
// another architecture's paths.
bool isa_supported(Isa isa);
// The widest path this CPU runs.
Isa widest_isa();

// The path the kernels take: the widest supported, or SHOAL_ISA's. Reads SHOAL_ISA on the first
// call and throws shoal::Error for a value that names no path of this architecture or one this
// CPU cannot run. Every kernel entry point settles it before its first dispatch.
Isa active_isa();
// Whether SHOAL_ISA narrowed the path below widest_isa().
bool isa_narrowed();

// One line for `shoal --version` and `shoal bench peak`: the path that runs and who chose it,
// e.g. "isa: avx512, 16 float lanes (the widest this CPU runs; SHOAL_ISA=sse4|avx2 narrows it)".
std::string describe_isa();

// Tests: runs the kernels on `isa` (which the CPU must support) until destroyed, then on the
// path they ran on before. Not thread-safe: no kernel may run on another thread meanwhile.
class ScopedIsa {
 public:
  explicit ScopedIsa(Isa isa);
  ~ScopedIsa();
  ScopedIsa(const ScopedIsa&) = delete;
  ScopedIsa& operator=(const ScopedIsa&) = delete;

 private:
  Isa previous_;
};

}  // namespace shoal::kernels
