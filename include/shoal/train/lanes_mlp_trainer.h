// Up to 8 MLP fits of the same shape trained in lockstep, one per SIMD lane
// (models/lanes_mlp.h): the hyper-parameter-sweep form of the fleet (K seeds or learning rates
// of one MLP, each on its own shuffled copy of the data). Lane k computes what a one-thread
// MlpTrainer with the same data and seed computes (same standardisation, init, epoch order,
// batches, MSE and Adam), up to float rounding of sums taken in another order.
//
// Lockstep means one batch size, shape and row count for every lane. Learning rates may
// differ: Adam then runs per lane with each lane's step size (the same float arithmetic). It pays
// only at tiny widths: lanes_mlp_wins says when (docs/fleet.md, "Horizontal fusion").
#pragma once

#include <cstdint>
#include <vector>

#include "shoal/models/lanes_mlp.h"
#include "shoal/optim/adam.h"
#include "shoal/train/mlp_trainer.h"

namespace shoal::train {

// The crossover measured by `shoal bench fusion` (docs/fleet.md, "Horizontal fusion"): the
// fused step was ≥ 10% faster per model than the per-model path, in every run (median and best
// samples), when the widest layer W (in, hidden or out) and the batch rows are
//   W ≤ 8: any batch (measured to 512 rows);  W ≤ 16: ≤ 256 rows;  W ≤ 64: ≤ 32 rows.
// The 8× larger fused operands leave L1/L2 sooner, so the win shrinks with rows and width.
// W 32 at 64–128 rows and W 16 at 512 win in some runs only (by < 25%) and are left off.
inline constexpr Index kLanesAnyBatchWidth = 8;
inline constexpr Index kLanesMidWidth = 16;
inline constexpr Index kLanesMidWidthRows = 256;
inline constexpr Index kLanesMaxWidth = 64;
inline constexpr Index kLanesMaxWidthRows = 32;

// Whether fusing 8 fits of this MLP at this batch size is expected to win (ReLU or no hidden
// layer, and the widths above).
bool lanes_mlp_wins(const models::Mlp<float>::Config& model, Index batch_size);

struct LaneData {
  ConstMat<double> x;  // [M, I]
  ConstMat<double> y;  // [M, O]
  uint64_t seed = 1;
  double lr = -1;  // this fit's Adam learning rate; < 0: the trainer's cfg.lr
};

class LanesMlpTrainer {
 public:
  // cfg.threads and cfg.seed are ignored (one thread; each lane has its seed). Data is copied.
  LanesMlpTrainer(const models::Mlp<float>::Config& model, const MlpTrainConfig& cfg,
                  const std::vector<LaneData>& lanes);

  int lanes() const { return static_cast<int>(lanes_.size()); }
  // One epoch of every lane; returns each lane's mean step loss (standardised units), valid
  // until the next epoch. Allocates nothing.
  const std::vector<double>& train_epoch();
  int64_t steps() const { return optimizer_.step_count(); }
  // Lane `lane`'s metrics on rows of (x, y) in original units.
  RegressionMetrics evaluate(int lane, ConstMat<double> x, ConstMat<double> y);
  models::LanesMlp& model() { return model_; }
  const Arena& arena() const { return arena_; }

 private:
  struct Lane {
    std::vector<float> x, y;  // standardised, row-major
    std::vector<double> x_mean, x_std, y_mean, y_std;
    std::vector<int32_t> order;
    uint64_t seed = 1;
  };
  MlpTrainConfig cfg_;
  models::LanesMlp model_;
  Buffer<float> xb_, yb_, dout_;
  Arena arena_;
  optim::Adam<float> optimizer_;
  std::vector<Lane> lanes_;
  std::vector<double> epoch_loss_;
  std::vector<float> zero_row_;  // the input of lanes without a fit
  double lane_lr_[kernels::kLanes] = {};
  bool one_lr_ = true;  // every lane has cfg.lr: the ordinary Adam pass
  void adam_per_lane();
  Index rows_ = 0, in_ = 0, out_ = 0;
  int epoch_ = 0;
};

}  // namespace shoal::train
