// Selection of a batch's instances by a key range, with their fields (the NCF trainer's share
// of a batch, train/ncf_shares.h: the instances whose id of the split side lies in the thread's
// range of ids).
// Legend: N instances.
#pragma once

#include <cstdint>

#include "shoal/core/tensor.h"

namespace shoal::kernels {

// The instances k < n whose key lies in [lo, hi), in order: their four fields (key, other,
// ctx_rows, labels; ctx_rows may be null, then out_ctx_rows is not written) copied to the out
// arrays, which have room for n each. Returns their count. Elements past the count, up to n,
// may be overwritten. A vector of instances at a time: the selected lanes packed to the
// front by one compress per field and stored (the stores past the count are overwritten by
// the next ones), a third of the plain loop's time.
Index select_range(Index n, int32_t lo, int32_t hi, const int32_t* keys, const int32_t* others,
                   const int32_t* ctx_rows, const float* labels, int32_t* out_keys,
                   int32_t* out_others, int32_t* out_ctx_rows, float* out_labels);
// The plain twin (branch-free: every instance is written at the count, which a selected one
// then passes).
Index select_range_ref(Index n, int32_t lo, int32_t hi, const int32_t* keys, const int32_t* others,
                       const int32_t* ctx_rows, const float* labels, int32_t* out_keys,
                       int32_t* out_others, int32_t* out_ctx_rows, float* out_labels);

}  // namespace shoal::kernels
