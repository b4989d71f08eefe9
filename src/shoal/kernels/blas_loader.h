// Internal to src/shoal/kernels: the one place shoal reaches OpenBLAS. The library is not
// linked; it is loaded on first use (after OPENBLAS_CORETYPE is chosen, see
// include/shoal/kernels/blas.h) and every function shoal calls is resolved here, once.
// cblas.h is included for its types and declarations only: decltype names no symbol.
#pragma once

#include <cblas.h>

namespace shoal::kernels::detail {

struct BlasApi {
  decltype(&::cblas_sgemm) sgemm = nullptr;
  decltype(&::cblas_dgemm) dgemm = nullptr;
};

// The loaded OpenBLAS, set to one thread. Throws shoal::Error, naming the library and why, when
// it cannot be loaded (then every later call throws the same).
const BlasApi& blas_api();

}  // namespace shoal::kernels::detail
