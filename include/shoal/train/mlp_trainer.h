// Trains an MLP regressor on a numeric table with all cores: mini-batches of a seeded shuffle,
// each split across threads (data parallel, see data_parallel.h), MSE loss, Adam. Features and
// target are standardised with the training split's mean and std; metrics are reported in the
// target's own units.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "shoal/core/thread_pool.h"
#include "shoal/models/mlp.h"
#include "shoal/optim/adam.h"
#include "shoal/profile/recorder.h"

namespace shoal::train {

struct MlpTrainConfig {
  Index batch_size = 64;  // rows per optimizer step (split across threads)
  double lr = 1e-3;
  uint64_t seed = 1;
  int threads = 1;  // 0 = all allowed CPUs
  Pinning pinning = Pinning::kWorkers;
};

struct RegressionMetrics {
  double mse = 0;
  double mae = 0;
  double r2 = 0;
};

struct EpochReport {
  int epoch = 0;          // 1-based
  double train_loss = 0;  // mean of the step losses (standardised units)
  double seconds = 0;
  int64_t steps = 0;
};

class MlpTrainer {
 public:
  // x [M, I] and y [M, O] are copied into the trainer (standardised) once.
  MlpTrainer(const models::Mlp<float>::Config& model, const MlpTrainConfig& cfg, ConstMat<double> x,
             ConstMat<double> y);
  ~MlpTrainer();

  EpochReport train_epoch();
  // Metrics of the model on rows of (x, y) in original units (standardised internally).
  RegressionMetrics evaluate(ConstMat<double> x, ConstMat<double> y);
  // The source model (params, grads, optimizer state live in its arena).
  models::Mlp<float>& model();
  const Arena& arena() const;
  int threads() const { return pool_.size(); }
  int64_t steps() const { return optimizer_.step_count(); }
  // Records zones (data, layers, loss, optimizer, eval, the fork-join waits as idle) into `rec`
  // and marks a profiler step after every optimizer step. Registers the zones, so call it
  // before rec.start(); null detaches.
  void set_profiler(profile::Recorder* rec, int model = 0);

 private:
  struct Replica;
  void step(Index begin, Index end);

  MlpTrainConfig cfg_;
  ThreadPool pool_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::vector<const Arena*> arenas_;
  optim::Adam<float> optimizer_;
  std::vector<float> x_, y_;  // standardised training data, row-major
  Index rows_ = 0, in_ = 0, out_ = 0;
  std::vector<double> x_mean_, x_std_, y_mean_, y_std_;
  std::vector<int32_t> order_;  // this epoch's row permutation
  std::vector<double> thread_loss_;
  int epoch_ = 0;
  profile::Recorder* prof_ = nullptr;
  struct Zones {
    profile::ZoneId shuffle, batch, loss_forward, loss_backward, optimizer, wait, eval;
  } zones_{};
};

}  // namespace shoal::train
