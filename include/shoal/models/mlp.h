// MLP: x → [Linear → act] × len(hidden) → Linear → out. The activation is fused into each
// hidden Linear's epilogue. Parameters are named "layers.{k}.weight"/"layers.{k}.bias", k
// counting Linear layers from 0.
// Shapes: x [N, I], hidden widths H_k, out [N, O].
#pragma once

#include <string>
#include <vector>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/layers/linear.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

template <class T>
class Mlp {
 public:
  struct Config {
    Index in = 0;
    std::vector<Index> hidden;
    Index out = 1;
    kernels::Act act = kernels::Act::kRelu;
  };

  explicit Mlp(Config cfg);
  // Layers are bound to the arena by address: a planned model must stay where it is.
  Mlp(const Mlp&) = delete;
  Mlp& operator=(const Mlp&) = delete;

  const Config& config() const { return cfg_; }
  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  // Returns the output rows [N, O] (a view of the model's last activation buffer).
  MatView<T> forward(const Ctx& ctx, ConstMat<T> x);
  // dout [N, O]: gradient of the loss w.r.t. the output of the last forward on x. Parameter
  // gradients accumulate; no gradient is computed for x.
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> dout);
  // Profiler zones "{prefix}layers.{k}.forward" / ".backward" with their analytic costs
  // (profile/cost.h); forward and backward record them when ctx.profiler is set.
  void register_zones(profile::Recorder& rec, int model = 0, std::string_view prefix = "");

  template <class F>
  void for_each_param(F&& f) {
    for (size_t k = 0; k < linears_.size(); ++k) {
      const std::string prefix = "layers." + std::to_string(k) + ".";
      linears_[k].for_each_param(
          [&](std::string_view name, Param<T>& p) { f(prefix + std::string(name), p); });
    }
  }

 private:
  ConstMat<T> input_of(size_t k, ConstMat<T> x, Index rows) const;

  Config cfg_;
  std::vector<layers::Linear<T>> linears_;
  std::vector<Buffer<T>> acts_;             // output of Linear k, [N, width_k]
  std::vector<Buffer<T>> dacts_;            // gradient w.r.t. acts_[k]
  std::vector<profile::LayerZones> zones_;  // per Linear; unregistered: not recorded
};

}  // namespace shoal::models
