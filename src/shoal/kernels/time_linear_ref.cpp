// Reference time-Linear kernels: sequential sums in T, straight from time_linear.h.
#include "shoal/kernels/time_linear.h"

namespace shoal::kernels {

template <class T>
void time_weight_grad_ref(Index no, Index ni, Index c, Index batch, const T* g, Index ldg,
                          const T* x, Index ldx, T* dw) {
  for (Index o = 0; o < no; ++o)
    for (Index i = 0; i < ni; ++i) {
      T s = 0;
      for (Index b = 0; b < batch; ++b)
        for (Index j = 0; j < c; ++j) s += g[(b * no + o) * ldg + j] * x[(b * ni + i) * ldx + j];
      dw[o * ni + i] += s;
    }
}

template void time_weight_grad_ref<float>(Index, Index, Index, Index, const float*, Index,
                                          const float*, Index, float*);
template void time_weight_grad_ref<double>(Index, Index, Index, Index, const double*, Index,
                                           const double*, Index, double*);

}  // namespace shoal::kernels
