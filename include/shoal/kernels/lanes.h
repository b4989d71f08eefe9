// Horizontal fusion: kLanes (8) same-shaped models stepping in lockstep, one model per fp32 SIMD
// lane (the "compact" layout of MKL's *_compact routines, written here from the idea).
//
// Lane-interleaved layout: a [R, C] matrix of 8 models is stored as R·C groups of 8 floats,
// group (r, c) at element (r·C + c)·8 and model k's element in lane k of the group:
//   model k's M[r, c]  =  buf[(r·C + c)·8 + k]
// So one 8-float vector holds the same element of all 8 models, every product of the Linear
// layer is a plain scalar loop nest whose scalar ops are vector ops across models, and no
// dimension needs padding: a width of 1 or 3 vectorises as well as 64. A group of fewer than 8
// models leaves the unused lanes zero (they train a zero model: harmless, wasted).
//
// Legend as in gemm.h: N batch rows, I in features, O out features, W [O, I]. All buffers are
// contiguous (row stride = cols groups), float only. Every fast kernel has a *_ref twin (plain
// loops) that tests compare it against. See docs/fleet.md, "Horizontal fusion".
#pragma once

#include <span>

#include "shoal/core/tensor.h"

namespace shoal::kernels {

inline constexpr Index kLanes = 8;

// Elements of a lane-interleaved [rows, cols] buffer.
constexpr Index lanes_size(Index rows, Index cols) {
  return rows * cols * kLanes;
}

// Interleaves up to kLanes row-major matrices of the same [rows, cols] shape (any ld) into
// dst [rows, cols, 8]; lanes without a source are set to 0. With 8 sources the fast version
// transposes 8 × 8 blocks in registers.
void lanes_pack(std::span<const ConstMat<float>> src, float* dst);
void lanes_pack_ref(std::span<const ConstMat<float>> src, float* dst);
// Throws shoal::Error unless src holds 1 to 8 matrices of one shape.
void lanes_check_pack(std::span<const ConstMat<float>> src);
// The inverse: lane k of src [rows, cols, 8] into dst[k] (dst.size() ≤ kLanes).
void lanes_unpack(const float* src, std::span<const MatView<float>> dst);

// y[N, O] = x[N, I] · Wᵀ + b, optionally through ReLU; b may be null.
void lanes_linear_forward(const float* x, const float* w, const float* b, Index n, Index i, Index o,
                          bool relu, float* y);
void lanes_linear_forward_ref(const float* x, const float* w, const float* b, Index n, Index i,
                              Index o, bool relu, float* y);

// dx[N, I] = dz[N, O] · W   (overwritten)
void lanes_linear_dx(const float* dz, const float* w, Index n, Index i, Index o, float* dx);
void lanes_linear_dx_ref(const float* dz, const float* w, Index n, Index i, Index o, float* dx);

// dW[O, I] (+)= dzᵀ · x   (overwritten, or added to when accumulate)
void lanes_linear_dw(const float* dz, const float* x, Index n, Index i, Index o, float* dw,
                     bool accumulate);
void lanes_linear_dw_ref(const float* dz, const float* x, Index n, Index i, Index o, float* dw,
                         bool accumulate);

// db[O] (+)= Σ_n dz[n, :]
void lanes_bias_grad(const float* dz, Index n, Index o, float* db, bool accumulate);
void lanes_bias_grad_ref(const float* dz, Index n, Index o, float* db, bool accumulate);

// The whole Linear backward: dz = relu ? dy ⊙ (y > 0) : dy (dz is scratch [N, O]; with
// relu false it is not written and dy is used), then db, dx (skipped when null) and dW.
// dW and db accumulate or overwrite like lanes_linear_dw.
void lanes_linear_backward(const float* x, const float* w, const float* y, bool relu,
                           const float* dy, float* dz, float* dx, float* dw, float* db, Index n,
                           Index i, Index o, bool accumulate);
void lanes_linear_backward_ref(const float* x, const float* w, const float* y, bool relu,
                               const float* dy, float* dz, float* dx, float* dw, float* db, Index n,
                               Index i, Index o, bool accumulate);

}  // namespace shoal::kernels
