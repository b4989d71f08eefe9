// The doubly residual stack of NBEATS, NBEATSx and NHITS (Oreshkin et al., ICLR 2020): blocks
// walked in order, each reading the residual its predecessors left and subtracting its own
// backcast from it, their forecasts summed on top of the level.
//   out = y_L (every step starts at the window's last value, neuralforecast's "Level with
//   Naive1"),  r₀ = flip(y) (the window, newest first)
//   block i: (backᵢ, foreᵢ) = fᵢ(rᵢ),  rᵢ₊₁ = (rᵢ − backᵢ) ⊙ m,  out += foreᵢ
// m: the window's insample mask, flipped like r (neuralforecast's: a window whose input starts
// before its series, padded with zeros, keeps zero residuals there); all ones without one.
// Backward, with dr the gradient of the loss w.r.t. the residual leaving block i (0 for the
// last block, whose residual is not used): g = dr ⊙ m is the gradient of rᵢ − backᵢ; block i's
// backcast gets −g, its forecast dout, and dr becomes g plus its input's gradient before block
// i − 1; block 0's input is the data.
// With M outputs per step (a multi-output loss) out is neuralforecast's [B, H, M]: the level
// fills every output, and a block's forecast is either [B, H, M] (added as it is) or [B, H] (an
// NBEATSx exogenous block, whose one output torch broadcasts over the M).
// The models own the blocks and their buffers; these walk them, so the three share one loop.
// Legend: B windows, L input_size, H horizon, M outputs per forecast value.
#pragma once

#include <algorithm>
#include <span>
#include <string_view>
#include <utility>

#include "shoal/layers/nbeats_basis.h"
#include "shoal/models/forecast.h"
#include "shoal/models/mixing.h"  // add_into
#include "shoal/profile/recorder.h"

namespace shoal::models {

// An NBEATS / NBEATSx stack type's basis ("trend", "seasonality"; anything else: identity).
inline layers::BasisKind basis_kind(std::string_view stack) {
  if (stack == "trend") return layers::BasisKind::kTrend;
  if (stack == "seasonality") return layers::BasisKind::kSeasonality;
  return layers::BasisKind::kIdentity;
}

// x ⊙ flip(mask) over each window's L steps (the residuals run newest first).
template <class T>
void mask_flipped(const ForecastInputs<T>& in, Index L, MatView<T> x) {
  for (Index w = 0; w < in.batch; ++w) {
    const T* m = in.insample_mask + w * L;
    for (Index t = 0; t < L; ++t) x(w, t) *= m[L - 1 - t];
  }
}

// `input(i)`: block i's input rows [B, ≥ L], whose first L columns take its residual.
// `run(i, input)`: runs block i, returning {backcast [B, L], forecast [B, H·M] or [B, H]}.
// out [B, H·M]; returns it as the trainer's [B·H, N·M] (N = 1).
template <class T, class Input, class Run>
MatView<T> residual_stack_forward(const ForecastInputs<T>& in, Index L, Index H, Index M,
                                  MatView<T> out, std::span<const profile::LayerZones> zones,
                                  profile::ZoneChain& zone, Input&& input, Run&& run) {
  const Index B = in.batch;
  for (Index w = 0; w < B; ++w)
    std::fill(out.row(w), out.row(w) + H * M, in.insample_y[w * L + L - 1]);
  if (zones.empty()) return MatView<T>(out.data, B * H, M);
  MatView<T> r0 = input(size_t(0));
  for (Index w = 0; w < B; ++w)
    for (Index t = 0; t < L; ++t) r0(w, t) = in.insample_y[w * L + L - 1 - t];
  for (size_t i = 0; i < zones.size(); ++i) {
    zone.next(zones[i].forward);
    const MatView<T> r = input(i);
    const auto [back, fore] = run(i, r);
    if (i + 1 < zones.size()) {
      MatView<T> next = input(i + 1);
      for (Index w = 0; w < B; ++w)
        for (Index t = 0; t < L; ++t) next(w, t) = r(w, t) - back(w, t);
      if (in.insample_mask != nullptr) mask_flipped(in, L, next);
    }
    if (fore.cols == out.cols) {
      add_into<T>(fore, out);
    } else {
      for (Index w = 0; w < B; ++w)
        for (Index t = 0; t < H; ++t)
          for (Index q = 0; q < M; ++q) out(w, t * M + q) += fore(w, t);
    }
  }
  return MatView<T>(out.data, B * H, M);
}

// `back(i, dr, dinput)`: block i's backward, its backcast's gradient being −dr; it writes the
// gradient w.r.t. its residual input into dinput [B, L] (empty for block 0: the data).
// dr and dinput are the model's [B, L] buffers.
template <class T, class Back>
void residual_stack_backward(const ForecastInputs<T>& in, Index L, MatView<T> dr, MatView<T> dinput,
                             std::span<const profile::LayerZones> zones, profile::ZoneChain& zone,
                             Back&& back) {
  const Index B = in.batch;
  for (Index w = 0; w < B; ++w) std::fill(dr.row(w), dr.row(w) + L, T(0));
  for (size_t i = zones.size(); i-- > 0;) {
    zone.next(zones[i].backward);
    if (in.insample_mask != nullptr && i + 1 < zones.size()) mask_flipped(in, L, dr);
    back(i, ConstMat<T>(dr), i > 0 ? dinput : MatView<T>{});
    if (i > 0) add_into<T>(dinput, dr);
  }
}

}  // namespace shoal::models
