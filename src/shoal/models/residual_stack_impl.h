// Internal to src/shoal/models: the definitions of models/residual_stack.h's ResidualStackModel,
// instantiated by each stacked model's source (nbeats.cpp, nbeatsx.cpp, nhits.cpp) for its own
// Block, which is complete only there.
#pragma once

#include <utility>

#include "shoal/models/residual_stack.h"
#include "shoal/models/zones.h"

namespace shoal::models {

template <class Model, class T, class C, class Block>
ResidualStackModel<Model, T, C, Block>::ResidualStackModel(C cfg) : Base(std::move(cfg)) {}

template <class Model, class T, class C, class Block>
ResidualStackModel<Model, T, C, Block>::~ResidualStackModel() = default;

// Each block under "blocks.<i>.", its MLP under "layers." (on its owner's weights when shared),
// then the block's own buffers; then the model's, the stack's output and residual gradients.
template <class Model, class T, class C, class Block>
void ResidualStackModel<Model, T, C, Block>::plan(Planner& planner, Index max_batch) {
  this->set_max_batch(max_batch);
  const Index B = max_batch, L = cfg_.input_size;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    planner.push_scope("blocks." + std::to_string(i) + ".");
    planner.push_scope("layers.");
    blocks_[i]->mlp.plan(planner, B, owner_[i] != i ? mlps_[owner_[i]] : nullptr);
    planner.pop_scope();
    blocks_[i]->plan(planner, B, self());
    planner.pop_scope();
  }
  self().plan_inputs(planner, B);
  planner.buffer(out_, Region::kActivations, "out", {B, cfg_.h * cfg_.outputs});
  planner.buffer(dr_, Region::kActivationGrads, "dr", {B, L});
  planner.buffer(drb_, Region::kScratch, "drb", {B, L});
}

template <class Model, class T, class C, class Block>
void ResidualStackModel<Model, T, C, Block>::init(RngStream& rng) {
  for (auto& b : blocks_) b->init(rng);
}

template <class Model, class T, class C, class Block>
MatView<T> ResidualStackModel<Model, T, C, Block>::forward(const Ctx& ctx,
                                                           const ForecastInputs<T>& in) {
  const Index B = in.batch;
  self().before_forward(in);
  profile::ZoneChain zone(ctx.profiler, B);
  return residual_stack_forward<T>(
      in, cfg_.input_size, cfg_.h, cfg_.outputs, batch_rows(out_, B), zones_, zone,
      [&](size_t i) { return batch_rows(blocks_[i]->r, B); },
      [&](size_t i, MatView<T> r) { return blocks_[i]->forward(ctx, in, r, self()); });
}

template <class Model, class T, class C, class Block>
void ResidualStackModel<Model, T, C, Block>::backward(const Ctx& ctx, const ForecastInputs<T>& in,
                                                      ConstMat<T> dout) {
  const Index B = in.batch;
  const ConstMat<T> dy = self().before_backward(in, dout);
  profile::ZoneChain zone(ctx.profiler, B);
  residual_stack_backward<T>(in, cfg_.input_size, batch_rows(dr_, B), batch_rows(drb_, B), zones_,
                             zone, [&](size_t i, ConstMat<T> dr, MatView<T> dinput) {
                               blocks_[i]->backward(ctx, in, dy, dr, dinput, self());
                             });
  self().after_backward(in);
}

// Per window; a block's backward without its input gradient for block 0 (the data).
template <class Model, class T, class C, class Block>
void ResidualStackModel<Model, T, C, Block>::register_zones(profile::Recorder& rec, int model) {
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const Block& b = *blocks_[i];
    zones_[i] = cost_zones(
        rec, model, "blocks." + std::to_string(i), 1,
        [&](double rows) { return b.forward_cost(rows, self()); },
        [&](double rows) { return b.backward_cost(rows, i > 0, self()); });
  }
}

}  // namespace shoal::models
