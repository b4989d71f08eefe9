// Analytic FLOPs and bytes of the layers' forward and backward passes and of the optimizer.
// Our CI machines have no hardware counters, so the profiler's GFLOP/s, GB/s and roofline rest on
// these closed forms, computed from shapes.
//
// Conventions. A multiply-add is 2 FLOPs. Bytes are the compulsory traffic of one call: every
// input, parameter and saved tensor read once, every output written once (E = element size),
// ignoring caches and the re-reads a blocked kernel makes. A backward is split into dX (the
// input gradient) and dW (parameter gradients). Where a layer's exact count depends on the
// kernel (GELU's tanh, a square root) the count below is a documented approximation:
//   ReLU 1 FLOP/element (and 1 for its derivative), GELU 10 (and 12), sqrt or divide 1.
// Dims: N rows, I in, O out, F features, D embedding width, P parameter elements.
#pragma once

#include <cstdint>

namespace shoal::profile {

struct Cost {
  double flops = 0;
  double bytes = 0;
  Cost& operator+=(const Cost& o) {
    flops += o.flops;
    bytes += o.bytes;
    return *this;
  }
  friend Cost operator+(Cost a, const Cost& b) { return a += b; }
  friend bool operator==(const Cost&, const Cost&) = default;
};

// A call's cost as a function of its rows n: per_row·n + fixed. Every layer below is affine in
// N (parameters are read once per call: the fixed part), so a zone records only its row count.
struct AffineCost {
  Cost per_row;
  Cost fixed;
  Cost at(double rows) const {
    return {per_row.flops * rows + fixed.flops, per_row.bytes * rows + fixed.bytes};
  }
  // From any affine f(n): fixed = f(0), per_row = f(1) − f(0).
  template <class F>
  static AffineCost of(F&& f) {
    const Cost c0 = f(0.0), c1 = f(1.0);
    return {{c1.flops - c0.flops, c1.bytes - c0.bytes}, c0};
  }
};

enum class ActKind : uint8_t { kNone, kRelu, kGelu };
double act_flops(ActKind a);       // per element, forward
double act_grad_flops(ActKind a);  // per element, backward

// Linear y = act(x·Wᵀ + b): 2NIO for the GEMM, NO for the bias, act per element.
Cost linear_forward(double n, double in, double out, bool bias, ActKind act, double elem = 4);
// dZ = dY·act'(Z), dX = dZ·W: 2NIO + act' per element.
Cost linear_backward_dx(double n, double in, double out, ActKind act, double elem = 4);
// dW += dZᵀ·X: 2NIO (+ NO for db += Σ dZ); dW, db are read and written (accumulated).
Cost linear_backward_dw(double n, double in, double out, bool bias, double elem = 4);

// LayerNorm over F per row (and BatchNorm over N per column: the same counts, see below).
// Forward: mean F, variance 3F (subtract, square, add), normalise and affine 4F → 8NF.
Cost layer_norm_forward(double n, double f, bool affine, double elem = 4);
// dX: x̂ recomputed 2F, the two row sums 3F, the combination 5F → 10NF. dW/db: 3NF.
Cost layer_norm_backward_dx(double n, double f, double elem = 4);
Cost layer_norm_backward_dw(double n, double f, bool affine, double elem = 4);
Cost batch_norm_forward(double n, double f, bool affine, double elem = 4);
Cost batch_norm_backward_dx(double n, double f, double elem = 4);
Cost batch_norm_backward_dw(double n, double f, bool affine, double elem = 4);

// Elementwise over N·F with k inputs and one output, `per_elem` FLOPs each.
Cost elementwise(double n, double f, double per_elem, int inputs, double elem = 4);
// Series decomposition by a k-wide moving average over rows of L (models/dlinear.h): k adds
// and a divide per trend element, a subtract per remainder; reads x, writes trend and remainder.
Cost series_decomp(double n, double l, double k, double elem = 4);
// Dropout: a mask multiply per element (Philox not counted as FLOPs); backward the same.
Cost dropout(double n, double f, double elem = 4);
// Embedding gather of N rows of width D (0 FLOPs); backward scatter-adds N·D.
Cost embedding_forward(double n, double d, double elem = 4);
Cost embedding_backward(double n, double d, double elem = 4);
// Point losses on [N, F]: forward 3 FLOPs/element (e = ŷ − y, ℓ(e), sum), backward 2.
Cost point_loss_forward(double n, double f, double elem = 4);
Cost point_loss_backward(double n, double f, double elem = 4);
// Adam/AdamW on P elements: m (3), v (4), the update (6: two sqrt/div, eps, scale, add) → 13P;
// reads p, g, m, v and writes p, m, v → 7PE (+PE for amsgrad's v̂, read and written).
Cost adam_update(double p, bool amsgrad = false, double elem = 4);
// SGD with momentum: 4P FLOPs (buf = μ·buf + g, p −= lr·buf), reads p, g, buf, writes p, buf.
Cost sgd_update(double p, bool momentum, double elem = 4);
// Summing R replica gradient copies into the source and clearing them: (R−1)P adds; reads
// source and replica, writes both.
Cost grad_reduce(double p, int replicas, double elem = 4);

}  // namespace shoal::profile
