// The OpenBLAS that shoal's large GEMMs run on, and which of its kernel sets (its "core type").
//
// OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels from a table of CPU models, read
// once when the library is loaded. A CPU newer than the table gets its generic SSE3 (Prescott)
// kernels, about a fifth of the speed. So shoal does not link OpenBLAS: it loads it on first use,
// after setting OPENBLAS_CORETYPE from the CPU's own feature bits (unless the user set it), and
// reports here what it asked for and what runs.
#pragma once

#include <cstdint>
#include <string>

namespace shoal::kernels {

// The x86 feature bits that decide OpenBLAS's core type: each true only when the CPU has it and
// the OS saves its registers (as __builtin_cpu_supports reports).
struct BlasCpuFeatures {
  bool avx2 = false, fma = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512_bf16 = false;
};
BlasCpuFeatures blas_cpu_features();

// The OPENBLAS_CORETYPE for these features: "Cooperlake" (AVX-512 F/BW/VL/DQ with BF16),
// "SkylakeX" (AVX-512 F/BW/VL/DQ), "Haswell" (AVX2 + FMA), or null: nothing wider than what
// OpenBLAS's own detection finds, so it is left to choose.
const char* openblas_coretype_for(const BlasCpuFeatures& f);
// The core type shoal asks for in this process: openblas_coretype_for(blas_cpu_features())
// (whose features SHOAL_ISA narrows), or "Nehalem" when SHOAL_ISA=sse4 narrows a wider CPU
// (OpenBLAS's own detection would pick the CPU's widest kernels). Null: OpenBLAS decides.
const char* openblas_coretype_wanted();

// Who decided the core type that runs.
enum class BlasCoreSource : uint8_t {
  kShoal,      // shoal set OPENBLAS_CORETYPE from the CPU's features before loading it
  kUser,       // OPENBLAS_CORETYPE was set in the environment
  kOpenBlas,   // OpenBLAS's own detection (shoal had nothing to ask for)
  kPreloaded,  // the process had loaded OpenBLAS before shoal did: its choice, used as is
};

struct BlasInfo {
  bool loaded = false;
  std::string library;    // the soname shoal loads
  std::string config;     // openblas_get_config(): version and build options
  std::string core;       // openblas_get_corename(): the kernel set that runs
  int threads = 0;        // openblas_get_num_threads() once shoal has set it to 1
  std::string requested;  // the OPENBLAS_CORETYPE in force at load ("" when none)
  BlasCoreSource source = BlasCoreSource::kOpenBlas;
  std::string error;  // why it could not be loaded, when !loaded
};

// Loads OpenBLAS (once per process) if it is not loaded yet, and describes it. Never throws.
const BlasInfo& blas_info();

// One line for `shoal --version` and `shoal bench peak`, e.g.
// "blas: OpenBLAS 0.3.21, core SkylakeX, 1 thread (chosen by shoal from the CPU's features; ...)".
std::string describe_blas(const BlasInfo& info);

}  // namespace shoal::kernels
