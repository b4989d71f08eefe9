// Data-parallel training steps of a windowed model whose windows are independent (a univariate
// model trained over many series): each thread runs forward, loss and backward on its
// contiguous share of the step's windows on its own replica (ForecastTrainer's replica
// constructor: params shared with replica 0), then one fused pass per parameter chunk sums the
// replicas' grads into replica 0 in replica order (train/data_parallel.h), runs Adam on it and
// clears the grads. The loss is the masked mean over the whole step (Σ W is known before the
// forward), so the summed gradient is the whole batch's; the sum's order is fixed, so a thread
// count gives bitwise-identical weights run after run. A model that couples the windows of a
// batch (BatchNorm's batch statistics: PatchTST) runs every step whole on one thread, whatever
// the count asked for, so that its statistics stay the whole batch's, as neuralforecast's.
#pragma once

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "shoal/core/thread_pool.h"
#include "shoal/kernels/reduce.h"
#include "shoal/train/data_parallel.h"
#include "shoal/train/forecast_trainer.h"

namespace shoal::train {

template <class Model, class T>
requires WindowModel<Model, T>
class ParallelForecastTrainer {
 public:
  using Trainer = ForecastTrainer<Model, T>;

  // `threads` replicas (0: every allowed CPU), each planned for its share of `max_batch`
  // windows; replica 0 (which also predicts) for max(that, `max_predict`).
  ParallelForecastTrainer(const typename Model::Config& model, typename Trainer::Config cfg,
                          int threads, Index max_predict)
      : pool_(Model::kWindowsIndependent ? ThreadPool::resolve(threads) : 1, Pinning::kNone) {
    const int t = pool_.size();
    const Index share = (cfg.max_batch + t - 1) / t;
    for (int k = 0; k < t; ++k) {
      models_.push_back(std::make_unique<Model>(model));
      typename Trainer::Config c = cfg;
      c.max_batch = k == 0 ? std::max(share, max_predict) : share;
      if (k == 0)
        trainers_.push_back(std::make_unique<Trainer>(*models_.back(), c));
      else
        trainers_.push_back(std::make_unique<Trainer>(*models_.back(), c, *trainers_[0]));
      arenas_.push_back(&trainers_.back()->arena());
    }
    sync_state();
    for (const Arena* a : arenas_)
      std::memset(a->region_base(Region::kGrads), 0, a->region_bytes(Region::kGrads));
    num_.assign(size_t(t), 0.0);
    seed_ = cfg.seed;
  }

  // Replicas share the params but plan their own state, which only the source's init (or a
  // checkpoint loaded into the source) fills: copies the source's state into every replica
  // (constant buffers such as NBEATS' fixed bases). Call it after loading into source().
  void sync_state() {
    const size_t bytes = arenas_[0]->region_bytes(Region::kState);
    for (size_t k = 1; k < arenas_.size(); ++k) {
      SHOAL_CHECK(arenas_[k]->region_bytes(Region::kState) == bytes,
                  "replica state {} B, source {} B", arenas_[k]->region_bytes(Region::kState),
                  bytes);
      if (bytes > 0)
        std::memcpy(arenas_[k]->region_base(Region::kState),
                    arenas_[0]->region_base(Region::kState), bytes);
    }
  }

  int threads() const { return pool_.size(); }
  Trainer& source() { return *trainers_[0]; }
  // Profiler: every replica registers its model's zones (one set of names: the recorder keeps
  // them per thread) and memory plan; each thread's forward and backward then record into
  // `rec` (null: off).
  void set_profiler(profile::Recorder* rec, int model = 0) {
    prof_ = rec;
    for (auto& t : trainers_) t->set_profiler(rec, model);
  }
  Model& model() { return *models_[0]; }

  // One optimizer step on a batch (target and mask [B·H, N]; loc and scale [B, N] as
  // ForecastTrainer::train_step's); returns the loss before the update. A non-finite loss sum
  // leaves the weights as they were (last_step_diverged()).
  double train_step(const ForecastInputs<T>& in, ConstMat<T> target, ConstMat<T> mask,
                    ConstMat<T> loc = {}, ConstMat<T> scale = {}) {
    Trainer& src = *trainers_[0];
    const double den = src.loss().denominator(mask, target.rows, target.cols);
    const T s = static_cast<T>(1.0 / den);
    // The loss's batch-wide terms (MASE's insample scale) come from the whole batch.
    src.prepare_loss(in);
    for (size_t k = 1; k < trainers_.size(); ++k)
      trainers_[k]->loss().set_insample_factor(src.loss().insample_factor());
    const Index h = window_horizon(*models_[0], true);
    Ctx base{.training = true, .seed = seed_, .step = static_cast<uint64_t>(steps_)};
    base.profiler = prof_;
    pool_.run([&](int tid) {
      const Range r = split_range(in.batch, tid, pool_.size());
      num_[size_t(tid)] = 0;
      if (r.size() == 0) return;
      Trainer& tr = *trainers_[size_t(tid)];
      const auto windows = [&](ConstMat<T> m) {
        return m.data == nullptr ? m : m.rows_block(r.begin, r.size());
      };
      num_[size_t(tid)] = tr.accumulate(
          base, r.size() == in.batch ? in : tr.slice(in, r.begin, r.size()),
          target.rows_block(r.begin * h, r.size() * h), mask.rows_block(r.begin * h, r.size() * h),
          windows(loc), windows(scale), s);
    });
    double num = 0;
    for (const double v : num_) num += v;
    diverged_ = !std::isfinite(num);
    ++steps_;
    if (diverged_) {
      for (const Arena* a : arenas_)
        std::memset(a->region_base(Region::kGrads), 0, a->region_bytes(Region::kGrads));
      return 0;
    }
    const double ratio = num / den;
    // The replicas' gradients are those of the mean; RMSE's √ scales them all alike.
    const T g = static_cast<T>(std::isfinite(ratio) ? src.loss().finish_grad(ratio) : 1.0);
    optim::Adam<T>& adam = trainers_[0]->optimizer();
    const double clip = trainers_[0]->gradient_clip_val();
    if (clip > 0) {
      // The global norm needs every chunk reduced first: reduce and sum squares, then scale
      // and update. Per-thread sums joined in thread order keep the step deterministic.
      pool_.run([&](int tid) {
        const Range r = reduce_grads_chunk<T>(arenas_, tid, pool_.size());
        T* grads = arenas_[0]->grads<T>();
        if (g != T(1))
          for (Index i = r.begin; i < r.end; ++i) grads[i] *= g;
        num_[size_t(tid)] = optim::grad_square_sum(grads, r.begin, r.end);
      });
      double squares = 0;
      for (const double v : num_) squares += v;
      const T c = static_cast<T>(optim::clip_coefficient(squares, clip));
      adam.begin_step();
      pool_.run([&](int tid) {
        const Range r =
            split_range(arenas_[0]->dense_param_elems(), tid, pool_.size(), kParamGrain);
        T* grads = arenas_[0]->grads<T>();
        for (Index i = r.begin; i < r.end; ++i) grads[i] *= c;
        adam.update(*arenas_[0], r.begin, r.end);
        zero_grads<T>(*arenas_[0], r);
      });
      return std::isfinite(ratio) ? src.loss().finish(ratio) : 0.0;
    }
    adam.begin_step();
    pool_.run([&](int tid) {
      const Range r = reduce_grads_chunk<T>(arenas_, tid, pool_.size());
      if (g != T(1)) {
        T* grads = arenas_[0]->grads<T>();
        for (Index i = r.begin; i < r.end; ++i) grads[i] *= g;
      }
      adam.update(*arenas_[0], r.begin, r.end);
      zero_grads<T>(*arenas_[0], r);
    });
    return std::isfinite(ratio) ? src.loss().finish(ratio) : 0.0;
  }

  bool last_step_diverged() const { return diverged_; }
  int64_t steps() const { return steps_; }

 private:
  ThreadPool pool_;
  std::vector<std::unique_ptr<Model>> models_;
  std::vector<std::unique_ptr<Trainer>> trainers_;
  std::vector<const Arena*> arenas_;
  std::vector<double> num_;
  uint64_t seed_ = 1;
  int64_t steps_ = 0;
  bool diverged_ = false;
  profile::Recorder* prof_ = nullptr;
};

}  // namespace shoal::train
