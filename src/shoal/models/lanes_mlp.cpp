#include "shoal/models/lanes_mlp.h"

#include <cmath>
#include <string>

#include "shoal/layers/init.h"

namespace shoal::models {

using kernels::kLanes;

LanesMlp::LanesMlp(Config cfg) : cfg_(std::move(cfg)) {
  SHOAL_CHECK(cfg_.in > 0 && cfg_.out > 0, "MLP needs in > 0 and out > 0, got in={} out={}",
              cfg_.in, cfg_.out);
  SHOAL_CHECK(cfg_.hidden.empty() || cfg_.act == kernels::Act::kRelu,
              "the lane-fused MLP supports ReLU only");
  Index width = cfg_.in;
  for (Index h : cfg_.hidden) {
    SHOAL_CHECK(h > 0, "MLP hidden widths must be > 0, got {}", h);
    layers_.push_back({.in = width, .out = h, .relu = true});
    width = h;
  }
  layers_.push_back({.in = width, .out = cfg_.out, .relu = false});
}

void LanesMlp::plan(Planner& planner, Index max_rows) {
  for (size_t k = 0; k < layers_.size(); ++k) {
    Layer& l = layers_[k];
    planner.push_scope("layers." + std::to_string(k) + ".");
    planner.param(l.weight, "weight", {l.out, l.in, kLanes});
    planner.param(l.bias, "bias", {l.out, kLanes});
    planner.buffer(l.y, Region::kActivations, "out", {max_rows, l.out, kLanes});
    planner.buffer(l.dy, Region::kActivationGrads, "dout", {max_rows, l.out, kLanes});
    planner.buffer(l.dz, Region::kScratch, "dz", {max_rows, l.out, kLanes});
    planner.pop_scope();
  }
}

void LanesMlp::init_lane(Index lane, RngStream& rng) {
  SHOAL_CHECK(lane >= 0 && lane < kLanes, "lane {} outside [0, {})", lane, kLanes);
  for (Layer& l : layers_) {
    // As layers::Linear::init: W then b, in row-major order.
    const float wb = layers::kaiming_uniform_bound(l.in), bb = layers::linear_bias_bound(l.in);
    for (Index e = 0; e < l.out * l.in; ++e)
      l.weight.value.data[e * kLanes + lane] = rng.uniform(-wb, wb);
    for (Index e = 0; e < l.out; ++e) l.bias.value.data[e * kLanes + lane] = rng.uniform(-bb, bb);
  }
}

const float* LanesMlp::forward(const float* x, Index n) {
  const float* in = x;
  for (Layer& l : layers_) {
    kernels::lanes_linear_forward(in, l.weight.value.data, l.bias.value.data, n, l.in, l.out,
                                  l.relu, l.y.view.data);
    in = l.y.view.data;
  }
  return in;
}

void LanesMlp::backward(const float* x, const float* dout, Index n) {
  const float* dy = dout;
  for (size_t k = layers_.size(); k-- > 0;) {
    Layer& l = layers_[k];
    const float* in = k == 0 ? x : layers_[k - 1].y.view.data;
    float* dx = k == 0 ? nullptr : layers_[k - 1].dy.view.data;
    kernels::lanes_linear_backward(in, l.weight.value.data, l.y.view.data, l.relu, dy,
                                   l.dz.view.data, dx, l.weight.grad.data, l.bias.grad.data, n,
                                   l.in, l.out, /*accumulate=*/true);
    dy = dx;
  }
}

void LanesMlp::copy_lane_to(Index lane, Mlp<float>& model) const {
  SHOAL_CHECK(lane >= 0 && lane < kLanes, "lane {} outside [0, {})", lane, kLanes);
  size_t k = 0;
  model.for_each_param([&](const std::string& name, Param<float>& p) {
    const Layer& l = layers_[k / 2];
    const bool is_weight = name.ends_with("weight");
    const Param<float>& src = is_weight ? l.weight : l.bias;
    SHOAL_CHECK(p.value.numel() * kLanes == src.value.numel(),
                "copy_lane_to: '{}' has {} elements, the fused model {} per lane", name,
                p.value.numel(), src.value.numel() / kLanes);
    for (Index e = 0; e < p.value.numel(); ++e) p.value.data[e] = src.value.data[e * kLanes + lane];
    ++k;
  });
}

void lanes_mse(const float* pred, const float* target, Index n, Index f, float* dpred,
               double* loss) {
  const Index count = n * f;
  const auto scale = static_cast<float>(1.0 / static_cast<double>(count > 0 ? count : 1));
  double sum[kLanes] = {};
  for (Index e = 0; e < count; ++e)
    for (Index l = 0; l < kLanes; ++l) {
      const float d = pred[e * kLanes + l] - target[e * kLanes + l];
      sum[l] += static_cast<double>(d) * static_cast<double>(d);
      dpred[e * kLanes + l] = 2.0f * d * scale;
    }
  for (Index l = 0; l < kLanes; ++l) loss[l] = sum[l] * static_cast<double>(scale);
}

}  // namespace shoal::models
