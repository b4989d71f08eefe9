#include "blas_loader.h"

#include <dlfcn.h>

#include <strings.h>
#include <cstdlib>
#include <optional>
#include <string>

#include "shoal/core/error.h"
#include "shoal/kernels/blas.h"
#include "shoal/kernels/isa.h"

namespace shoal::kernels {

BlasCpuFeatures blas_cpu_features() {
  BlasCpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
#endif
  // SHOAL_ISA narrows OpenBLAS's kernels with shoal's own.
  const Isa isa = active_isa();
  if (isa < Isa::kAvx512) f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512_bf16 = false;
  if (isa < Isa::kAvx2) f.avx2 = f.fma = false;
  return f;
}

const char* openblas_coretype_for(const BlasCpuFeatures& f) {
  // OpenBLAS's SkylakeX kernels need F, BW, VL and DQ; Cooperlake's add BF16 (for its bf16
  // GEMMs; the FP32 kernels are SkylakeX's). Its Haswell kernels need AVX2 and FMA. Below that
  // there is nothing to gain over its own detection.
  const bool avx512 = f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
  if (avx512) return f.avx512_bf16 ? "Cooperlake" : "SkylakeX";
  if (f.avx2 && f.fma) return "Haswell";
  return nullptr;
}

namespace {

// SHOAL_ISA=sse4 on a wider CPU: OpenBLAS's SSE4.2-era kernels, not its own (wider) detection.
constexpr const char* kSse4CoreType = "Nehalem";

}  // namespace

// OpenBLAS's core types are chosen by shoal on x86 only: its Arm builds detect their cores
// themselves, and shoal has no narrower Arm path to match.
const char* openblas_coretype_wanted() {
#if defined(__x86_64__) || defined(__i386__)
  if (isa_narrowed() && active_isa() == Isa::kSse4) return kSse4CoreType;
  return openblas_coretype_for(blas_cpu_features());
#else
  return nullptr;
#endif
}

namespace {

// The soname Debian's BLAS alternatives (and OpenBLAS's own install) provide.
constexpr const char* kOpenBlasSoname = "libopenblas.so.0";
constexpr const char* kCoreTypeVar = "OPENBLAS_CORETYPE";

using SetThreadsFn = void (*)(int);
using GetThreadsFn = int (*)();
using StringFn = char* (*)();

struct BlasLoaded {
  BlasInfo info;
  detail::BlasApi api;
};

// Sets OPENBLAS_CORETYPE for the duration of one load and puts back what was there: OpenBLAS
// reads it once, in its load-time constructor, and the process's environment (which every child
// process inherits, PyTorch peers of `shoal bench` among them) stays as the user left it.
class ScopedCoreType {
 public:
  explicit ScopedCoreType(const char* value) {
    if (const char* old = std::getenv(kCoreTypeVar)) old_ = old;
    setenv(kCoreTypeVar, value, 1);
  }
  ~ScopedCoreType() {
    if (old_)
      setenv(kCoreTypeVar, old_->c_str(), 1);
    else
      unsetenv(kCoreTypeVar);
  }
  ScopedCoreType(const ScopedCoreType&) = delete;
  ScopedCoreType& operator=(const ScopedCoreType&) = delete;

 private:
  std::optional<std::string> old_;
};

std::string last_dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

BlasLoaded load_openblas() {
  BlasLoaded out;
  BlasInfo& info = out.info;
  info.library = kOpenBlasSoname;
  dlerror();
  // Already in the process (another library linked or loaded it): its constructor has run and
  // its core type is fixed, so it is used as it is and reported so.
  void* handle = dlopen(kOpenBlasSoname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (handle != nullptr) {
    info.source = BlasCoreSource::kPreloaded;
    if (const char* v = std::getenv(kCoreTypeVar)) info.requested = v;
  } else if (const char* user = std::getenv(kCoreTypeVar); user != nullptr && *user != '\0') {
    info.source = BlasCoreSource::kUser;
    info.requested = user;
    handle = dlopen(kOpenBlasSoname, RTLD_NOW | RTLD_LOCAL);
  } else if (const char* want = openblas_coretype_wanted()) {
    info.source = BlasCoreSource::kShoal;
    info.requested = want;
    ScopedCoreType scoped(want);
    handle = dlopen(kOpenBlasSoname, RTLD_NOW | RTLD_LOCAL);
  } else {
    info.source = BlasCoreSource::kOpenBlas;
    handle = dlopen(kOpenBlasSoname, RTLD_NOW | RTLD_LOCAL);
  }
  if (handle == nullptr) {
    info.error = last_dl_error();
    return out;
  }
  // The handle is never closed: OpenBLAS's worker threads live as long as the process.
  const auto resolve = [&](const char* name) -> void* {
    void* sym = dlsym(handle, name);
    if (sym == nullptr && info.error.empty())
      info.error = std::string(kOpenBlasSoname) + " has no " + name;
    return sym;
  };
  out.api.sgemm = reinterpret_cast<decltype(out.api.sgemm)>(resolve("cblas_sgemm"));
  out.api.dgemm = reinterpret_cast<decltype(out.api.dgemm)>(resolve("cblas_dgemm"));
  const auto set_threads = reinterpret_cast<SetThreadsFn>(resolve("openblas_set_num_threads"));
  const auto get_threads = reinterpret_cast<GetThreadsFn>(resolve("openblas_get_num_threads"));
  const auto corename = reinterpret_cast<StringFn>(resolve("openblas_get_corename"));
  const auto config = reinterpret_cast<StringFn>(resolve("openblas_get_config"));
  if (!info.error.empty()) {
    out.api = {};
    return out;
  }
  // One model stream per core: a BLAS call must never spawn or wake its own threads.
  set_threads(1);
  info.threads = get_threads();
  info.core = corename();
  info.config = config();
  info.loaded = true;
  return out;
}

const BlasLoaded& loaded_openblas() {
  static const BlasLoaded loaded = load_openblas();
  return loaded;
}

// "OpenBLAS 0.3.21" out of "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...".
std::string blas_name_and_version(const std::string& config) {
  const auto first = config.find(' ');
  if (first == std::string::npos) return config;
  const auto second = config.find(' ', first + 1);
  return config.substr(0, second);
}

}  // namespace

const BlasInfo& blas_info() {
  return loaded_openblas().info;
}

std::string describe_blas(const BlasInfo& info) {
  if (!info.loaded)
    return "blas: " + info.library + " not loaded (" + info.error +
           "); GEMMs that need OpenBLAS fail";
  std::string line = "blas: " + blas_name_and_version(info.config) + ", core " + info.core + ", " +
                     std::to_string(info.threads) +
                     (info.threads == 1 ? " thread (" : " threads (");
  switch (info.source) {
    case BlasCoreSource::kShoal:
      line += "chosen by shoal from the CPU's features; OPENBLAS_CORETYPE overrides it";
      break;
    case BlasCoreSource::kUser:
      line += "OPENBLAS_CORETYPE=" + info.requested + ", set by the user";
      break;
    case BlasCoreSource::kOpenBlas:
#if defined(__x86_64__) || defined(__i386__)
      line += "OpenBLAS's own choice: the CPU has neither AVX2+FMA nor AVX-512";
#else
      line += "OpenBLAS's own choice";
#endif
      break;
    case BlasCoreSource::kPreloaded:
      line += "loaded before shoal, its core type already fixed; used as it is";
      if (!info.requested.empty()) line += " with OPENBLAS_CORETYPE=" + info.requested;
      break;
  }
  // OpenBLAS falls back to its own detection for a name it does not know or cannot run.
  if ((info.source == BlasCoreSource::kShoal || info.source == BlasCoreSource::kUser) &&
      strcasecmp(info.core.c_str(), info.requested.c_str()) != 0)
    line += "; OpenBLAS did not take " + info.requested;
  return line + ")";
}

namespace detail {

const BlasApi& blas_api() {
  const BlasLoaded& b = loaded_openblas();
  SHOAL_CHECK(b.info.loaded,
              "OpenBLAS could not be loaded ({}): shoal's large GEMMs run on it; install it "
              "(Debian: libopenblas0)",
              b.info.error);
  return b.api;
}

}  // namespace detail

}  // namespace shoal::kernels
