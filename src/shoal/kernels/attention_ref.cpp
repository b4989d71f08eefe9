// The attention kernels' reference twins (attention.h): every score, probability and gradient
// in plain loops, in the order the formulas read.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "shoal/kernels/attention.h"

namespace shoal::kernels {

namespace {

// Whether key j is visible to query i.
bool visible(const AttentionShape& s, Index i, Index j) {
  return !s.causal || j <= i + s.lk - s.lq;
}

}  // namespace

template <class T>
void attention_forward_ref(const AttentionShape& s, AttentionInput<T> q, AttentionInput<T> k,
                           AttentionInput<T> v, AttentionOperand<T> out, T* probs, const T* drop,
                           AttentionResidual<T> res) {
  const Index pair = s.lq * s.lk;
  for (Index b = 0; b < s.batch; ++b)
    for (Index h = 0; h < s.heads; ++h) {
      const T* qh = q.at(b, h);
      const T* kh = k.at(b, h);
      const T* vh = v.at(b, h);
      T* oh = out.at(b, h);
      T* p = probs + (b * s.heads + h) * pair;
      const T* m = drop != nullptr ? drop + (b * s.heads + h) * pair : nullptr;
      for (Index i = 0; i < s.lq; ++i) {
        T top = -std::numeric_limits<T>::infinity();
        for (Index j = 0; j < s.lk; ++j) {
          T dot = 0;
          for (Index e = 0; e < s.d; ++e) dot += qh[i * q.ld + e] * kh[j * k.ld + e];
          T score = T(s.scale) * dot;
          if (res.on) {
            if (res.prior != nullptr) score += res.prior[(b * s.heads + h) * pair + i * s.lk + j];
            res.scores[(b * s.heads + h) * pair + i * s.lk + j] = score;
          }
          p[i * s.lk + j] = visible(s, i, j) ? score : -std::numeric_limits<T>::infinity();
          top = std::max(top, p[i * s.lk + j]);
        }
        T sum = 0;
        for (Index j = 0; j < s.lk; ++j) {
          T& x = p[i * s.lk + j];
          x = visible(s, i, j) ? std::exp(x - top) : T(0);
          sum += x;
        }
        for (Index j = 0; j < s.lk; ++j) p[i * s.lk + j] = sum > 0 ? p[i * s.lk + j] / sum : T(0);
        for (Index e = 0; e < s.dv; ++e) {
          T acc = 0;
          for (Index j = 0; j < s.lk; ++j)
            acc += p[i * s.lk + j] * (m != nullptr ? m[i * s.lk + j] : T(1)) * vh[j * v.ld + e];
          oh[i * out.ld + e] = acc;
        }
      }
    }
}

template <class T>
void attention_backward_ref(const AttentionShape& s, AttentionInput<T> q, AttentionInput<T> k,
                            AttentionInput<T> v, const T* probs, const T* drop,
                            AttentionInput<T> dout, AttentionOperand<T> dq, AttentionOperand<T> dk,
                            AttentionOperand<T> dv, AttentionResidualGrad<T> res) {
  const Index pair = s.lq * s.lk;
  std::vector<T> ds(static_cast<size_t>(pair));
  for (Index b = 0; b < s.batch; ++b)
    for (Index h = 0; h < s.heads; ++h) {
      const T* qh = q.at(b, h);
      const T* kh = k.at(b, h);
      const T* vh = v.at(b, h);
      const T* go = dout.at(b, h);
      const T* p = probs + (b * s.heads + h) * pair;
      const T* m = drop != nullptr ? drop + (b * s.heads + h) * pair : nullptr;
      auto mask = [&](Index i, Index j) { return m != nullptr ? m[i * s.lk + j] : T(1); };
      for (Index j = 0; j < s.lk; ++j)
        for (Index e = 0; e < s.dv; ++e) {
          T acc = 0;
          for (Index i = 0; i < s.lq; ++i)
            acc += p[i * s.lk + j] * mask(i, j) * go[i * dout.ld + e];
          dv.at(b, h)[j * dv.ld + e] = acc;
        }
      for (Index i = 0; i < s.lq; ++i) {
        T row = 0;
        for (Index j = 0; j < s.lk; ++j) {
          T dp = 0;
          for (Index e = 0; e < s.dv; ++e) dp += go[i * dout.ld + e] * vh[j * v.ld + e];
          ds[size_t(i * s.lk + j)] = dp * mask(i, j);
          row += ds[size_t(i * s.lk + j)] * p[i * s.lk + j];
        }
        for (Index j = 0; j < s.lk; ++j) {
          T& g = ds[size_t(i * s.lk + j)];
          g = p[i * s.lk + j] * (g - row);
          if (res.on && res.dscores != nullptr)
            g += res.dscores[(b * s.heads + h) * pair + i * s.lk + j];
          if (res.on && res.dprior != nullptr)
            res.dprior[(b * s.heads + h) * pair + i * s.lk + j] = g;
        }
      }
      for (Index i = 0; i < s.lq; ++i)
        for (Index e = 0; e < s.d; ++e) {
          T acc = 0;
          for (Index j = 0; j < s.lk; ++j) acc += ds[size_t(i * s.lk + j)] * kh[j * k.ld + e];
          dq.at(b, h)[i * dq.ld + e] = T(s.scale) * acc;
        }
      for (Index j = 0; j < s.lk; ++j)
        for (Index e = 0; e < s.d; ++e) {
          T acc = 0;
          for (Index i = 0; i < s.lq; ++i) acc += ds[size_t(i * s.lk + j)] * qh[i * q.ld + e];
          dk.at(b, h)[j * dk.ld + e] = T(s.scale) * acc;
        }
    }
}

#define SHOAL_INSTANTIATE(T)                                                                       \
  template void attention_forward_ref<T>(const AttentionShape&, AttentionInput<T>,                 \
                                         AttentionInput<T>, AttentionInput<T>,                     \
                                         AttentionOperand<T>, T*, const T*, AttentionResidual<T>); \
  template void attention_backward_ref<T>(                                                         \
      const AttentionShape&, AttentionInput<T>, AttentionInput<T>, AttentionInput<T>, const T*,    \
      const T*, AttentionInput<T>, AttentionOperand<T>, AttentionOperand<T>, AttentionOperand<T>,  \
      AttentionResidualGrad<T>);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::kernels
