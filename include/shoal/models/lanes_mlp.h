// kLanes (8) same-shaped MLPs fused across SIMD lanes (kernels/lanes.h): model k of the group is
// lane k of every parameter, activation and gradient. Same architecture and parameter names as
// models::Mlp ("layers.{k}.weight" [O, I, 8], "layers.{k}.bias" [O, 8]), ReLU only (GELU's
// erf per element is left to the per-model path). The parameters live in one arena like a
// single model's, so the flat optimizer pass (optim::Adam) updates all 8 models at once: Adam
// is elementwise, so lane k sees exactly the arithmetic a lone model would.
// Horizontal fusion wins only at tiny widths; see docs/fleet.md, "Horizontal fusion".
#pragma once

#include <vector>

#include "shoal/core/arena.h"
#include "shoal/core/rng.h"
#include "shoal/kernels/lanes.h"
#include "shoal/models/mlp.h"

namespace shoal::models {

class LanesMlp {
 public:
  using Config = Mlp<float>::Config;

  explicit LanesMlp(Config cfg);
  LanesMlp(const LanesMlp&) = delete;
  LanesMlp& operator=(const LanesMlp&) = delete;

  const Config& config() const { return cfg_; }
  void plan(Planner& planner, Index max_rows);
  // Initialises lane `lane` drawing from rng exactly as Mlp<float>::init does (layer by layer,
  // weight then bias, PyTorch's bounds), so a lane seeded like a lone model starts equal to it.
  void init_lane(Index lane, RngStream& rng);
  // x [N, in, 8] → output [N, out, 8] (a view of the last activation buffer).
  const float* forward(const float* x, Index n);
  // dout [N, out, 8]: gradient w.r.t. the last forward's output. Parameter gradients accumulate.
  void backward(const float* x, const float* dout, Index n);
  // Copies lane `lane`'s parameters into a planned per-model Mlp of the same config.
  void copy_lane_to(Index lane, Mlp<float>& model) const;

  struct Layer {
    Index in = 0, out = 0;
    bool relu = false;
    Param<float> weight;  // [O, I, 8]
    Param<float> bias;    // [O, 8]
    Buffer<float> y;      // [N, O, 8] output
    Buffer<float> dy;     // [N, O, 8] gradient w.r.t. y
    Buffer<float> dz;     // [N, O, 8] scratch
  };
  const std::vector<Layer>& layers() const { return layers_; }

 private:
  Config cfg_;
  std::vector<Layer> layers_;
};

// Per-lane MSE over [N, F, 8] (mean over N·F of each lane, as layers::MseLoss without weights):
// writes each lane's loss to loss[0..8) and dpred = 2·(pred − target) / (N·F).
void lanes_mse(const float* pred, const float* target, Index n, Index f, float* dpred,
               double* loss);

}  // namespace shoal::models
