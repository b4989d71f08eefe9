#include "shoal/train/lanes_mlp_trainer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "shoal/train/checks.h"

#include "standardise.h"

namespace shoal::train {

using kernels::kLanes;

namespace {

using detail::column_stats;
using detail::standardise;

}  // namespace

bool lanes_mlp_wins(const models::Mlp<float>::Config& model, Index batch_size) {
  if (!model.hidden.empty() && model.act != kernels::Act::kRelu) return false;
  Index widest = std::max(model.in, model.out);
  for (Index h : model.hidden) widest = std::max(widest, h);
  return widest <= kLanesAnyBatchWidth ||
         (widest <= kLanesMidWidth && batch_size <= kLanesMidWidthRows) ||
         (widest <= kLanesMaxWidth && batch_size <= kLanesMaxWidthRows);
}

LanesMlpTrainer::LanesMlpTrainer(const models::Mlp<float>::Config& model, const MlpTrainConfig& cfg,
                                 const std::vector<LaneData>& lanes)
    : cfg_(cfg), model_(model), optimizer_({.lr = cfg.lr}) {
  check_lr_and_batch(cfg.lr, cfg.batch_size);
  SHOAL_CHECK(!lanes.empty() && static_cast<Index>(lanes.size()) <= kLanes,
              "the lane-fused trainer takes 1 to {} fits, got {}", kLanes, lanes.size());
  rows_ = lanes[0].x.rows;
  in_ = model.in;
  out_ = model.out;
  SHOAL_CHECK(rows_ > 0, "no training rows");
  for (size_t l = 0; l < lanes.size(); ++l) {
    const LaneData& d = lanes[l];
    SHOAL_CHECK(d.x.rows == rows_ && d.y.rows == rows_,
                "fit {}: every fused fit needs the same row count ({}), got x {} and y {} rows", l,
                rows_, d.x.rows, d.y.rows);
    SHOAL_CHECK(d.x.cols == in_ && d.y.cols == out_,
                "fit {}: data has {} features and {} targets, the model expects {} and {}", l,
                d.x.cols, d.y.cols, in_, out_);
    const double lr = d.lr < 0 ? cfg.lr : d.lr;
    check_lr_and_batch(lr, cfg.batch_size);
    lane_lr_[l] = lr;
    if (lr != cfg.lr) one_lr_ = false;
    Lane lane;
    lane.seed = d.seed;
    column_stats(d.x, lane.x_mean, lane.x_std);
    column_stats(d.y, lane.y_mean, lane.y_std);
    lane.x.resize(static_cast<size_t>(rows_ * in_));
    lane.y.resize(static_cast<size_t>(rows_ * out_));
    standardise(d.x, lane.x_mean, lane.x_std, lane.x.data());
    standardise(d.y, lane.y_mean, lane.y_std, lane.y.data());
    lane.order.resize(static_cast<size_t>(rows_));
    lanes_.push_back(std::move(lane));
  }
  const Index max_rows = cfg.batch_size;
  Planner planner;
  planner.set_optim_slots(optimizer_.slots());
  model_.plan(planner, max_rows);
  planner.buffer(xb_, Region::kActivations, "batch.x", {max_rows, in_, kLanes});
  planner.buffer(yb_, Region::kActivations, "batch.y", {max_rows, out_, kLanes});
  planner.buffer(dout_, Region::kActivationGrads, "batch.dout", {max_rows, out_, kLanes});
  arena_ = Arena(std::move(planner));
  epoch_loss_.reserve(lanes_.size());
  zero_row_.assign(static_cast<size_t>(std::max(in_, out_)), 0.0f);
  for (size_t l = 0; l < lanes_.size(); ++l) {
    RngStream rng(lanes_[l].seed, /*stream=*/0);  // MlpTrainer's init stream
    model_.init_lane(static_cast<Index>(l), rng);
  }
}

const std::vector<double>& LanesMlpTrainer::train_epoch() {
  ++epoch_;
  for (Lane& lane : lanes_) {
    // MlpTrainer's Fisher-Yates on Philox stream 1000 + epoch of the lane's seed.
    for (size_t i = 0; i < lane.order.size(); ++i) lane.order[i] = static_cast<int32_t>(i);
    RngStream rng(lane.seed, 1000 + static_cast<uint64_t>(epoch_));
    for (size_t i = lane.order.size(); i > 1; --i)
      std::swap(lane.order[i - 1], lane.order[rng.below(static_cast<uint32_t>(i))]);
  }
  std::vector<double>& loss_sum = epoch_loss_;
  loss_sum.assign(lanes_.size(), 0.0);  // capacity reserved in the constructor
  int64_t steps = 0;
  float* xb = xb_.view.data;
  float* yb = yb_.view.data;
  for (Index b = 0; b < rows_; b += cfg_.batch_size) {
    const Index n = std::min(rows_, b + cfg_.batch_size) - b;
    // Gather each lane's rows into its lane with lanes_pack (8 × 8 transposes in registers);
    // lanes without a fit read a zero row (a zero model).
    for (Index i = 0; i < n; ++i) {
      std::array<ConstMat<float>, kLanes> xr, yr;
      for (size_t l = 0; l < static_cast<size_t>(kLanes); ++l) {
        if (l < lanes_.size()) {
          const Index src = lanes_[l].order[static_cast<size_t>(b + i)];
          xr[l] = {lanes_[l].x.data() + src * in_, 1, in_};
          yr[l] = {lanes_[l].y.data() + src * out_, 1, out_};
        } else {
          xr[l] = {zero_row_.data(), 1, in_};
          yr[l] = {zero_row_.data(), 1, out_};
        }
      }
      kernels::lanes_pack(xr, xb + i * in_ * kLanes);
      kernels::lanes_pack(yr, yb + i * out_ * kLanes);
    }
    const float* pred = model_.forward(xb, n);
    double loss[kLanes];
    models::lanes_mse(pred, yb, n, out_, dout_.view.data, loss);
    for (size_t l = 0; l < lanes_.size(); ++l) {
      if (!std::isfinite(loss[l])) {
        const Arena* a = &arena_;
        throw_non_finite_loss(optimizer_.step_count() + 1, std::span<const Arena* const>(&a, 1));
      }
      loss_sum[l] += loss[l];
    }
    model_.backward(xb, dout_.view.data, n);
    if (one_lr_)
      optimizer_.step(arena_);
    else
      adam_per_lane();
    std::memset(arena_.grads<float>(), 0, arena_.region_bytes(Region::kGrads));
    ++steps;
  }
  for (auto& s : loss_sum) s /= static_cast<double>(steps);
  return loss_sum;
}

// optim::Adam's update (weight decay 0, no amsgrad: what MlpTrainer uses) with a step size per
// lane: the per-step scalars are computed in double and rounded to float as Adam::begin_step
// does, and the element arithmetic is Adam's, op for op, so each lane matches a lone Adam with
// its own learning rate (to rounding: the compiler may contract the two loops differently).
void LanesMlpTrainer::adam_per_lane() {
  optimizer_.begin_step();  // counts the step (steps(), divergence messages)
  const auto& c = optimizer_.config();
  const double t = static_cast<double>(optimizer_.step_count());
  const double bias1 = 1.0 - std::pow(c.beta1, t), bias2 = 1.0 - std::pow(c.beta2, t);
  const auto lerp_w = static_cast<float>(1.0 - c.beta1), beta2 = static_cast<float>(c.beta2);
  const auto one_minus_beta2 = static_cast<float>(1.0 - c.beta2);
  const auto inv_bias2_sqrt = static_cast<float>(1.0 / std::sqrt(bias2)),
             eps = static_cast<float>(c.eps);
  float neg_step[kLanes];
  for (Index l = 0; l < kLanes; ++l) neg_step[l] = static_cast<float>(-(lane_lr_[l] / bias1));
  float* p = arena_.params<float>();
  const float* g = arena_.grads<float>();
  float* m = arena_.optim_state<float>(0);
  float* v = arena_.optim_state<float>(1);
  // Every arena entry starts on 64 bytes and holds whole groups of 8, so lane = element % 8.
  const Index n = arena_.dense_param_elems();
  for (Index e = 0; e < n; e += kLanes)
    for (Index l = 0; l < kLanes; ++l) {
      const Index i = e + l;
      m[i] = m[i] + lerp_w * (g[i] - m[i]);
      v[i] = v[i] * beta2 + one_minus_beta2 * g[i] * g[i];
      p[i] = p[i] + (neg_step[l] * m[i]) / (std::sqrt(v[i]) * inv_bias2_sqrt + eps);
    }
}

RegressionMetrics LanesMlpTrainer::evaluate(int lane, ConstMat<double> x, ConstMat<double> y) {
  SHOAL_CHECK(lane >= 0 && lane < lanes(), "lane {} outside [0, {})", lane, lanes());
  SHOAL_CHECK(x.rows == y.rows && x.cols == in_ && y.cols == out_,
              "evaluation data must be [M, {}] and [M, {}]", in_, out_);
  const Lane& ln = lanes_[static_cast<size_t>(lane)];
  const Index chunk = xb_.view.shape[0];
  float* xb = xb_.view.data;
  std::fill(xb, xb + kernels::lanes_size(chunk, in_), 0.0f);  // other lanes: zero inputs
  std::vector<float> rows(static_cast<size_t>(chunk * in_));
  double se = 0, ae = 0, sum = 0, sumsq = 0;
  for (Index b = 0; b < x.rows; b += chunk) {
    const Index n = std::min(chunk, x.rows - b);
    standardise(x.rows_block(b, n), ln.x_mean, ln.x_std, rows.data());
    for (Index e = 0; e < n * in_; ++e) xb[e * kLanes + lane] = rows[static_cast<size_t>(e)];
    const float* pred = model_.forward(xb, n);
    for (Index i = 0; i < n; ++i)
      for (Index c = 0; c < out_; ++c) {
        const double p = pred[(i * out_ + c) * kLanes + lane] * ln.y_std[static_cast<size_t>(c)] +
                         ln.y_mean[static_cast<size_t>(c)];
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
