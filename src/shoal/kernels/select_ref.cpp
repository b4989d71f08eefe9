#include "shoal/kernels/select.h"

namespace shoal::kernels {

Index select_range_ref(Index n, int32_t lo, int32_t hi, const int32_t* keys, const int32_t* others,
                       const int32_t* ctx_rows, const float* labels, int32_t* out_keys,
                       int32_t* out_others, int32_t* out_ctx_rows, float* out_labels) {
  Index m = 0;
  for (Index k = 0; k < n; ++k) {
    const int32_t u = keys[k];
    out_keys[m] = u;
    out_others[m] = others[k];
    if (ctx_rows != nullptr) out_ctx_rows[m] = ctx_rows[k];
    out_labels[m] = labels[k];
    m += u >= lo && u < hi ? 1 : 0;
  }
  return m;
}

}  // namespace shoal::kernels
