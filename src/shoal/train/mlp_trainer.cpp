#include "shoal/train/mlp_trainer.h"

#include <chrono>
#include <cmath>
#include <limits>

#include "shoal/layers/losses.h"
#include "shoal/train/checks.h"
#include "shoal/train/data_parallel.h"

#include "standardise.h"

namespace shoal::train {

void MlpOptions::validate() const {
  if (epochs < 1) option_out_of_range("epochs", "an integer ≥ 1", double(epochs));
  check_lr_and_batch(learning_rate, batch_size);
  if (!(val_fraction >= 0 && val_fraction < 1))
    option_out_of_range("val_fraction", "a fraction in [0, 1)", val_fraction);
  SHOAL_CHECK(!hidden.empty(), "config 'hidden' must list at least one width");
}
namespace {

// Validates before any member (the optimizer checks lr too, with a less specific message).
const MlpTrainConfig& checked(const MlpTrainConfig& c) {
  check_lr_and_batch(c.lr, c.batch_size);
  return c;
}

using detail::column_stats;
using detail::standardise;

}  // namespace

// One thread's model, batch buffers and loss. Replica 0's arena is the source of the params.
struct MlpTrainer::Replica {
  models::Mlp<float> model;
  Buffer<float> x, y, dout;
  layers::MseLoss<float> loss;
  Arena arena;

  Replica(const models::Mlp<float>::Config& cfg, Index max_rows, int optim_slots,
          const Arena* source)
      : model(cfg) {
    Planner planner;
    planner.set_optim_slots(source ? 0 : optim_slots);
    model.plan(planner, max_rows);
    planner.buffer(x, Region::kActivations, "batch.x", {max_rows, cfg.in});
    planner.buffer(y, Region::kActivations, "batch.y", {max_rows, cfg.out});
    planner.buffer(dout, Region::kActivationGrads, "batch.dout", {max_rows, cfg.out});
    arena = source ? Arena(std::move(planner), *source) : Arena(std::move(planner));
  }
};

MlpTrainer::MlpTrainer(const models::Mlp<float>::Config& model, const MlpTrainConfig& cfg,
                       ConstMat<double> x, ConstMat<double> y)
    : cfg_(checked(cfg)), pool_(cfg.threads, cfg.pinning), optimizer_({.lr = cfg.lr}) {
  SHOAL_CHECK(x.rows == y.rows, "x has {} rows but y has {}", x.rows, y.rows);
  SHOAL_CHECK(x.rows > 0, "no training rows");
  SHOAL_CHECK(x.cols == model.in && y.cols == model.out,
              "data has {} features and {} targets, the model expects {} and {}", x.cols, y.cols,
              model.in, model.out);
  rows_ = x.rows;
  in_ = x.cols;
  out_ = y.cols;
  column_stats(x, x_mean_, x_std_);
  column_stats(y, y_mean_, y_std_);
  x_.resize(static_cast<size_t>(rows_ * in_));
  y_.resize(static_cast<size_t>(rows_ * out_));
  standardise(x, x_mean_, x_std_, x_.data());
  standardise(y, y_mean_, y_std_, y_.data());

  const int t = pool_.size();
  const Index max_rows = (cfg.batch_size + t - 1) / t;
  for (int k = 0; k < t; ++k) {
    replicas_.push_back(std::make_unique<Replica>(model, max_rows, optimizer_.slots(),
                                                  k == 0 ? nullptr : &replicas_[0]->arena));
    arenas_.push_back(&replicas_.back()->arena);
  }
  RngStream init_rng(cfg.seed, /*stream=*/0);
  replicas_[0]->model.init(init_rng);
  order_.resize(static_cast<size_t>(rows_));
  thread_loss_.assign(static_cast<size_t>(t), 0.0);
}

MlpTrainer::~MlpTrainer() = default;

models::Mlp<float>& MlpTrainer::model() {
  return replicas_[0]->model;
}
const Arena& MlpTrainer::arena() const {
  return replicas_[0]->arena;
}

void MlpTrainer::step(Index begin, Index end) {
  const Index n = end - begin;
  Ctx base;
  base.seed = cfg_.seed;
  base.step = static_cast<uint64_t>(optimizer_.step_count());
  base.n_threads = pool_.size();
  base.profiler = prof_;
  {
    // The caller's time in a fork-join region beyond its own zones is waiting: idle.
    profile::Zone wait(prof_, zones_.wait);
    pool_.run([&](int tid) {
      Replica& rep = *replicas_[static_cast<size_t>(tid)];
      const Range r = split_range(n, tid, pool_.size());
      thread_loss_[static_cast<size_t>(tid)] = 0.0;
      if (r.size() == 0) return;
      const auto rows = static_cast<uint32_t>(r.size());
      Ctx ctx = base;
      ctx.thread = tid;
      MatView<float> xb = rep.x.mat().rows_block(0, r.size());
      MatView<float> yb = rep.y.mat().rows_block(0, r.size());
      {
        profile::Zone zone(prof_, zones_.batch, rows);
        for (Index i = 0; i < r.size(); ++i) {
          const Index src = order_[static_cast<size_t>(begin + r.begin + i)];
          std::copy_n(&x_[static_cast<size_t>(src * in_)], in_, xb.row(i));
          std::copy_n(&y_[static_cast<size_t>(src * out_)], out_, yb.row(i));
        }
      }
      MatView<float> pred = rep.model.forward(ctx, xb);
      // Each thread's loss is a mean over its rows; weighting by its share of the batch makes
      // the sum of the threads' gradients the gradient of the batch mean.
      const double share = static_cast<double>(r.size()) / static_cast<double>(n);
      MatView<float> dout = rep.dout.mat().rows_block(0, r.size());
      {
        profile::Zone zone(prof_, zones_.loss_forward, rows);
        const double l = rep.loss.forward(pred, yb);
        // PointLoss reports a non-finite mean as 0 (neuralforecast's rule); a fault is NaN here.
        thread_loss_[static_cast<size_t>(tid)] =
            rep.loss.numerator_finite() ? share * l : std::numeric_limits<double>::quiet_NaN();
      }
      {
        profile::Zone zone(prof_, zones_.loss_backward, rows);
        rep.loss.backward(pred, yb, dout, {}, share);
      }
      rep.model.backward(ctx, xb, dout);
    });
  }
  // One scalar per thread: a diverged step stops here, before its update poisons the weights.
  double loss = 0;
  for (const double l : thread_loss_) loss += l;
  if (!std::isfinite(loss)) throw_non_finite_loss(optimizer_.step_count() + 1, arenas_);
  optimizer_.begin_step();
  {
    profile::Zone wait(prof_, zones_.wait);
    pool_.run([&](int tid) {
      const Range chunk =
          split_range(arenas_[0]->dense_param_elems(), tid, pool_.size(), kParamGrain);
      profile::Zone zone(prof_, zones_.optimizer, static_cast<uint32_t>(chunk.size()));
      const Range r = reduce_grads_chunk<float>(arenas_, tid, pool_.size());
      optimizer_.update(*arenas_[0], r.begin, r.end);
      zero_grads<float>(*arenas_[0], r);
    });
  }
  if (prof_ != nullptr) prof_->step();
}

void MlpTrainer::set_profiler(profile::Recorder* rec, int model) {
  prof_ = rec;
  if (rec == nullptr) return;
  using profile::AffineCost;
  using profile::Category;
  using profile::Cost;
  for (auto& r : replicas_) r->model.register_zones(*rec, model);
  profile::MemoryPlan plan = profile::memory_plan(replicas_[0]->arena, "mlp", model);
  for (size_t i = 1; i < replicas_.size(); ++i) profile::add_replica(plan, replicas_[i]->arena);
  rec->add_memory(std::move(plan));
  const double in = static_cast<double>(in_), out = static_cast<double>(out_);
  const int replicas = static_cast<int>(replicas_.size());
  zones_.shuffle = rec->zone("data.shuffle", Category::kData, {}, model);
  // Gathering a row: its features and target read and written, plus its index.
  zones_.batch = rec->zone("data.batch", Category::kData, {{0, 8 * (in + out) + 4}, {}}, model);
  zones_.loss_forward = rec->zone(
      "loss.forward", Category::kForward,
      AffineCost::of([&](double n) { return profile::point_loss_forward(n, out); }), model);
  zones_.loss_backward = rec->zone(
      "loss.backward", Category::kBackward,
      AffineCost::of([&](double n) { return profile::point_loss_backward(n, out); }), model);
  // Rows of the optimizer zone are parameter elements: reduce the replicas' grads, update.
  zones_.optimizer = rec->zone(
      "optimizer.step", Category::kOptimizer,
      {profile::adam_update(1, optimizer_.config().amsgrad) + profile::grad_reduce(1, replicas),
       {}},
      model);
  zones_.wait = rec->zone("pool.wait", Category::kIdle, {}, model);
  zones_.eval = rec->zone("eval", Category::kEval, {}, model);
}

EpochReport MlpTrainer::train_epoch() {
  const auto t0 = std::chrono::steady_clock::now();
  ++epoch_;
  // Fisher-Yates with this epoch's own Philox stream: the order depends on (seed, epoch) only.
  {
    profile::Zone zone(prof_, zones_.shuffle, static_cast<uint32_t>(order_.size()));
    for (size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<int32_t>(i);
    RngStream rng(cfg_.seed, 1000 + static_cast<uint64_t>(epoch_));
    for (size_t i = order_.size(); i > 1; --i)
      std::swap(order_[i - 1], order_[rng.below(static_cast<uint32_t>(i))]);
  }

  EpochReport rep;
  rep.epoch = epoch_;
  double loss_sum = 0;
  for (Index b = 0; b < rows_; b += cfg_.batch_size) {
    step(b, std::min(rows_, b + cfg_.batch_size));
    for (double l : thread_loss_) loss_sum += l;
    ++rep.steps;
  }
  rep.train_loss = loss_sum / static_cast<double>(rep.steps);
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

RegressionMetrics MlpTrainer::evaluate(ConstMat<double> x, ConstMat<double> y) {
  SHOAL_CHECK(x.rows == y.rows && x.cols == in_ && y.cols == out_,
              "evaluation data must be [M, {}] and [M, {}]", in_, out_);
  Replica& rep = *replicas_[0];
  const Index chunk = rep.x.view.shape[0];
  profile::Zone zone(prof_, zones_.eval, static_cast<uint32_t>(x.rows));
  Ctx ctx;
  ctx.training = false;
  ctx.profiler = prof_;
  double se = 0, ae = 0, sum = 0, sumsq = 0;
  for (Index b = 0; b < x.rows; b += chunk) {
    const Index n = std::min(chunk, x.rows - b);
    MatView<float> xb = rep.x.mat().rows_block(0, n);
    standardise(x.rows_block(b, n), x_mean_, x_std_, xb.data);
    MatView<float> pred = rep.model.forward(ctx, xb);
    for (Index i = 0; i < n; ++i)
      for (Index c = 0; c < out_; ++c) {
        const double p =
            pred(i, c) * y_std_[static_cast<size_t>(c)] + y_mean_[static_cast<size_t>(c)];
        const double t = y(b + i, c);
        se += (p - t) * (p - t);
        ae += std::abs(p - t);
        sum += t;
        sumsq += t * t;
      }
  }
  const double m = static_cast<double>(x.rows * out_);
  RegressionMetrics out;
  out.mse = se / m;
  out.mae = ae / m;
  const double var = sumsq / m - (sum / m) * (sum / m);
  out.r2 = var > 0 ? 1.0 - out.mse / var : 0.0;
  return out;
}

}  // namespace shoal::train
