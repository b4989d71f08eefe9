#include "shoal/models/mlp.h"

namespace shoal::models {

template <class T>
Mlp<T>::Mlp(Config cfg) : cfg_(std::move(cfg)) {
  SHOAL_CHECK(cfg_.in > 0 && cfg_.out > 0, "MLP needs in > 0 and out > 0, got in={} out={}",
              cfg_.in, cfg_.out);
  linears_.reserve(cfg_.hidden.size() + 1);
  Index width = cfg_.in;
  for (Index h : cfg_.hidden) {
    SHOAL_CHECK(h > 0, "MLP hidden widths must be > 0, got {}", h);
    linears_.emplace_back(
        typename layers::Linear<T>::Config{.in = width, .out = h, .act = cfg_.act});
    width = h;
  }
  linears_.emplace_back(typename layers::Linear<T>::Config{.in = width, .out = cfg_.out});
  acts_.resize(linears_.size());
  dacts_.resize(linears_.size());
  zones_.resize(linears_.size());
}

template <class T>
void Mlp<T>::plan(Planner& planner, Index max_rows) {
  for (size_t k = 0; k < linears_.size(); ++k) {
    planner.push_scope("layers." + std::to_string(k) + ".");
    linears_[k].plan(planner, max_rows);
    planner.buffer(acts_[k], Region::kActivations, "out", {max_rows, linears_[k].cfg.out});
    planner.buffer(dacts_[k], Region::kActivationGrads, "dout", {max_rows, linears_[k].cfg.out});
    planner.pop_scope();
  }
}

template <class T>
void Mlp<T>::init(RngStream& rng) {
  for (auto& l : linears_) l.init(rng);
}

template <class T>
ConstMat<T> Mlp<T>::input_of(size_t k, ConstMat<T> x, Index rows) const {
  return k == 0 ? x : ConstMat<T>(acts_[k - 1].mat().rows_block(0, rows));
}

template <class T>
MatView<T> Mlp<T>::forward(const Ctx& ctx, ConstMat<T> x) {
  SHOAL_DCHECK(x.cols == cfg_.in);
  const Index n = x.rows;
  profile::Recorder* prof = zones_[0].registered() ? ctx.profiler : nullptr;
  for (size_t k = 0; k < linears_.size(); ++k) {
    profile::Zone zone(prof, zones_[k].forward, static_cast<uint32_t>(n));
    linears_[k].forward(ctx, input_of(k, x, n), acts_[k].mat().rows_block(0, n));
  }
  return acts_.back().mat().rows_block(0, n);
}

template <class T>
void Mlp<T>::backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> dout) {
  const Index n = x.rows;
  ConstMat<T> dy = dout;
  profile::Recorder* prof = zones_[0].registered() ? ctx.profiler : nullptr;
  for (size_t k = linears_.size(); k-- > 0;) {
    profile::Zone zone(prof, zones_[k].backward, static_cast<uint32_t>(n));
    MatView<T> dx = k == 0 ? MatView<T>{} : dacts_[k - 1].mat().rows_block(0, n);
    linears_[k].backward(ctx, input_of(k, x, n), acts_[k].mat().rows_block(0, n), dy, dx);
    dy = dx;
  }
}

template <class T>
void Mlp<T>::register_zones(profile::Recorder& rec, int model, std::string_view prefix) {
  for (size_t k = 0; k < linears_.size(); ++k) {
    const auto& c = linears_[k].cfg;
    const auto act = static_cast<profile::ActKind>(c.act);
    const double in = static_cast<double>(c.in), out = static_cast<double>(c.out);
    const std::string name = fmt::format("{}layers.{}.", prefix, k);
    zones_[k].forward = rec.zone(
        name + "forward", profile::Category::kForward, profile::AffineCost::of([&](double n) {
          return profile::linear_forward(n, in, out, c.bias, act, sizeof(T));
        }),
        model);
    // The first layer's input gradient is not computed (the model input needs none).
    const bool dx = k > 0;
    zones_[k].backward = rec.zone(
        name + "backward", profile::Category::kBackward, profile::AffineCost::of([&](double n) {
          profile::Cost cost = profile::linear_backward_dw(n, in, out, c.bias, sizeof(T));
          if (dx)
            cost += profile::linear_backward_dx(n, in, out, act, sizeof(T));
          else
            cost.flops += profile::act_grad_flops(act) * n * out;  // dZ is still formed
          return cost;
        }),
        model);
  }
}

template class Mlp<float>;
template class Mlp<double>;

}  // namespace shoal::models
