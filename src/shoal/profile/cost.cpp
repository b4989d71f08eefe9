#include "shoal/profile/cost.h"

namespace shoal::profile {

double act_flops(ActKind a) {
  return a == ActKind::kRelu ? 1 : a == ActKind::kGelu ? 10 : 0;
}
double act_grad_flops(ActKind a) {
  return a == ActKind::kRelu ? 1 : a == ActKind::kGelu ? 12 : 0;
}

Cost linear_forward(double n, double in, double out, bool bias, ActKind act, double elem) {
  Cost c;
  c.flops = 2 * n * in * out + (bias ? n * out : 0) + act_flops(act) * n * out;
  // x, W, b read; y written (and the pre-activation, kept for GELU's backward).
  c.bytes = elem * (n * in + out * in + (bias ? out : 0) + n * out +
                    (act == ActKind::kGelu ? n * out : 0));
  return c;
}

Cost linear_backward_dx(double n, double in, double out, ActKind act, double elem) {
  Cost c;
  c.flops = 2 * n * in * out + act_grad_flops(act) * n * out;
  // dY and the saved Y (or pre-activation) read when there is an activation; W read; dX
  // written; dZ written once for the dW GEMM.
  const double saved = act == ActKind::kNone ? 0 : n * out;
  const double dz = act == ActKind::kNone ? 0 : n * out;
  c.bytes = elem * (n * out + saved + out * in + n * in + dz);
  return c;
}

Cost linear_backward_dw(double n, double in, double out, bool bias, double elem) {
  Cost c;
  c.flops = 2 * n * in * out + (bias ? n * out : 0);
  c.bytes = elem * (n * out + n * in + 2 * out * in + (bias ? 2 * out : 0));
  return c;
}

Cost layer_norm_forward(double n, double f, bool affine, double elem) {
  return {8 * n * f, elem * (2 * n * f + (affine ? 2 * f : 0) + 2 * n)};
}
Cost layer_norm_backward_dx(double n, double f, double elem) {
  return {10 * n * f, elem * (3 * n * f + f + 2 * n)};
}
Cost layer_norm_backward_dw(double n, double f, bool affine, double elem) {
  if (!affine) return {};
  return {3 * n * f, elem * (2 * n * f + 4 * f + 2 * n)};
}
// BatchNorm normalises columns over N rows: the same operation counts with the roles of the
// row statistics (2N values) taken by column statistics (2F values) and running stats (2F, read
// and written in training).
Cost batch_norm_forward(double n, double f, bool affine, double elem) {
  return {8 * n * f, elem * (2 * n * f + (affine ? 2 * f : 0) + 2 * f + 4 * f)};
}
Cost batch_norm_backward_dx(double n, double f, double elem) {
  return {10 * n * f, elem * (3 * n * f + f + 2 * f)};
}
Cost batch_norm_backward_dw(double n, double f, bool affine, double elem) {
  if (!affine) return {};
  return {3 * n * f, elem * (2 * n * f + 4 * f + 2 * f)};
}

Cost elementwise(double n, double f, double per_elem, int inputs, double elem) {
  return {per_elem * n * f, elem * (inputs + 1) * n * f};
}
Cost series_decomp(double n, double l, double k, double elem) {
  return {(k + 2) * n * l, elem * 3 * n * l};
}
Cost dropout(double n, double f, double elem) {
  return {n * f, elem * 2 * n * f};
}
Cost embedding_forward(double n, double d, double elem) {
  return {0, elem * 2 * n * d + 8 * n};  // rows read and written, int64 ids
}
Cost embedding_backward(double n, double d, double elem) {
  return {n * d, elem * 3 * n * d + 8 * n};  // dY read, row grads read and written
}
Cost point_loss_forward(double n, double f, double elem) {
  return {3 * n * f, elem * 2 * n * f};
}
Cost point_loss_backward(double n, double f, double elem) {
  return {2 * n * f, elem * 3 * n * f};
}
Cost adam_update(double p, bool amsgrad, double elem) {
  return {13 * p + (amsgrad ? p : 0), elem * (7 * p + (amsgrad ? 2 * p : 0))};
}
Cost sgd_update(double p, bool momentum, double elem) {
  if (!momentum) return {2 * p, elem * 3 * p};
  return {4 * p, elem * 5 * p};
}
Cost grad_reduce(double p, int replicas, double elem) {
  const double r = replicas > 1 ? replicas - 1 : 0;
  return {r * p, elem * 4 * r * p};
}

}  // namespace shoal::profile
