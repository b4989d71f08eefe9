// Reference recurrent layers: the plain GEMM and the scalar gate math of recurrent_cell.h.
#include "recurrent_cell.h"
#include "recurrent_seq.h"

namespace shoal::kernels {
namespace {

template <class T>
struct RecurrentRefOps {
  static void gemm(Trans ta, Trans tb, Index m, Index n, Index k, T alpha, const T* a, Index lda,
                   const T* b, Index ldb, T beta, T* c, Index ldc) {
    gemm_ref<T>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  static void step_gemm(Index m, Index n, Index k, T alpha, const T* a, Index lda, const T* b,
                        Index ldb, T beta, T* c, Index ldc) {
    gemm_ref<T>(Trans::kNo, Trans::kNo, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  static void lstm_step(Index b, Index hd, T* g, const T* cp, T* c, T* h) {
    lstm_step_forward_ref<T>(b, hd, g, cp, c, h);
  }
  static void lstm_step_back(Index b, Index hd, const T* g, const T* cp, const T* c, const T* dh,
                             T* dc, T* dg) {
    for (Index r = 0; r < b; ++r)
      cell::lstm_backward(hd, 0, g + r * 4 * hd, cp + r * hd, c + r * hd, dh + r * hd, dc + r * hd,
                          dg + r * 4 * hd);
  }
  static void gru_step(Index b, Index hd, T* g, const T* gh, const T* hp, T* hn, T* h) {
    for (Index r = 0; r < b; ++r)
      cell::gru_forward(hd, 0, g + r * 3 * hd, gh + r * 3 * hd, hp + r * hd, hn + r * hd,
                        h + r * hd);
  }
  static void gru_step_back(Index b, Index hd, const T* g, const T* hn, const T* hp, const T* dh,
                            T* dgi, T* dgh, T* dhp) {
    for (Index r = 0; r < b; ++r)
      cell::gru_backward(hd, 0, g + r * 3 * hd, hn + r * hd, hp + r * hd, dh + r * hd,
                         dgi + r * 3 * hd, dgh + r * 3 * hd, dhp + r * hd);
  }
  static void tanh_step(Index n, T* a) { cell::tanh_forward(n, 0, a); }
  static void tanh_step_back(Index n, const T* h, const T* dh, T* da) {
    cell::tanh_backward(n, 0, h, dh, da);
  }
};

}  // namespace

template <class T>
void lstm_step_forward_ref(Index b, Index hd, T* g, const T* cp, T* c, T* h) {
  for (Index r = 0; r < b; ++r)
    cell::lstm_forward(hd, 0, g + r * 4 * hd, cp + r * hd, c + r * hd, h + r * hd);
}

template <class T>
void rnn_forward_ref(const RnnLayer<T>& layer, const T* x, T* h, const RnnSaved<T>& saved,
                     T* scratch) {
  detail::rnn_forward_seq<T, RecurrentRefOps<T>>(layer, x, h, saved, scratch);
}

template <class T>
void rnn_backward_ref(const RnnLayer<T>& layer, const T* x, const T* h, const RnnSaved<T>& saved,
                      const T* dh, T* dx, const RnnGrads<T>& grads, T* scratch) {
  detail::rnn_backward_seq<T, RecurrentRefOps<T>>(layer, x, h, saved, dh, dx, grads, scratch);
}

#define SHOAL_INSTANTIATE(T)                                                                    \
  template void lstm_step_forward_ref<T>(Index, Index, T*, const T*, T*, T*);                   \
  template void rnn_forward_ref<T>(const RnnLayer<T>&, const T*, T*, const RnnSaved<T>&, T*);   \
  template void rnn_backward_ref<T>(const RnnLayer<T>&, const T*, const T*, const RnnSaved<T>&, \
                                    const T*, T*, const RnnGrads<T>&, T*);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::kernels
