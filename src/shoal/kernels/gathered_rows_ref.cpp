#include "shoal/kernels/gathered_rows.h"

#include <algorithm>

namespace shoal::kernels {

template <class T>
void project_rows_ref(const T* table, Index ld, const int32_t* list, Index m, Index e, const T* wt,
                      Index l1, T* proj) {
  for (Index k = 0; k < m; ++k) {
    const T* x = table + static_cast<Index>(list[k]) * ld;
    T* y = proj + k * l1;
    std::fill_n(y, l1, T(0));
    for (Index p = 0; p < e; ++p)
      for (Index j = 0; j < l1; ++j) y[j] += x[p] * wt[p * l1 + j];
  }
}

template <class T>
void rows_weight_grad_ref(const T* table, Index ld, const int32_t* list, Index m, Index e,
                          const T* dz, Index l1, T* dw, Index ldw) {
  for (Index k = 0; k < m; ++k) {
    const T* x = table + static_cast<Index>(list[k]) * ld;
    for (Index j = 0; j < l1; ++j)
      for (Index p = 0; p < e; ++p) dw[j * ldw + p] += dz[k * l1 + j] * x[p];
  }
}

template void project_rows_ref<float>(const float*, Index, const int32_t*, Index, Index,
                                      const float*, Index, float*);
template void project_rows_ref<double>(const double*, Index, const int32_t*, Index, Index,
                                       const double*, Index, double*);
template void rows_weight_grad_ref<float>(const float*, Index, const int32_t*, Index, Index,
                                          const float*, Index, float*, Index);
template void rows_weight_grad_ref<double>(const double*, Index, const int32_t*, Index, Index,
                                           const double*, Index, double*, Index);

}  // namespace shoal::kernels
