// Trains an MLP regressor on a numeric table with all cores: mini-batches of a seeded shuffle,
// each split across threads (data parallel, see data_parallel.h), MSE loss, Adam. Features and
// target are standardised with the training split's mean and std; metrics are reported in the
// target's own units.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/core/options.h"
#include "shoal/core/thread_pool.h"
#include "shoal/models/mlp.h"
#include "shoal/optim/adam.h"
#include "shoal/profile/recorder.h"

namespace shoal::train {

// What a user sets for an MLP regressor, with the defaults written once: `shoal mlp train`'s
// flags and a jobs file's config keys both read this struct (core/options.h).
struct MlpOptions {
  std::string target = "y";
  std::vector<int64_t> hidden = {64, 64};
  std::string act = "relu";
  int64_t epochs = 30;
  int64_t batch_size = 64;
  double learning_rate = 1e-3;
  double val_fraction = 0.2;

  void visit(OptionVisitor& v) {
    static constexpr std::string_view kActs[] = {"relu", "gelu"};
    v("target", target, "Column to predict");
    v("hidden", hidden, "Hidden widths, comma separated");
    v.choice("act", act, kActs, "Hidden activation");
    v("epochs", epochs, "Passes over the training rows");
    v("batch_size", batch_size, "Rows per optimizer step");
    v("learning_rate", learning_rate, "Adam learning rate");
    v("val_fraction", val_fraction, "Share of rows held out for validation");
  }
  // Throws shoal::Error naming the first option out of range.
  void validate() const;
  // The model for a table of `in` feature columns.
  models::Mlp<float>::Config model(Index in) const {
    return {.in = in,
            .hidden = hidden,
            .out = 1,
            .act = act == "gelu" ? kernels::Act::kGelu : kernels::Act::kRelu};
  }
};

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
