// neuralforecast's DataEmbedding (common/_modules.py), the input block of VanillaTransformer,
// Informer, Autoformer and FEDformer: each token is its window's values around it, its
// position and its calendar (future exogenous) inputs, summed:
//   y[b, t] = dropout( Σ_{c,k} W[:, c, k] · x[b, (t + k − 1) mod T, c]     (value_embedding:
//                      + pe[t]                                               TokenEmbedding, a
//                      + E · mark[b, :, t0 + t] )                            kernel-3 Conv1d
// with circular padding and no bias; pe the fixed sine/cosine table of PositionalEmbedding;
// E the bias-free Linear of TimeFeatureEmbedding, present when F > 0).
// Parameters, neuralforecast's names: value_embedding.tokenConv.weight [E, C, 3] and
// temporal_embedding.embed.weight [E, F]. Init in torch's order: the Conv1d's default
// kaiming_uniform(a = √5) is drawn and then overwritten by kaiming_normal(fan_in = 3·C,
// leaky_relu with slope 0, so std = √2 / √(3·C)); then the Linear's kaiming_uniform.
// pe[t, 2i] = sin(t · ω_i), pe[t, 2i + 1] = cos(t · ω_i), ω_i = exp(2i · −ln(10⁴) / E), in
// float as torch builds it, but with exp, sin and cos correctly rounded: torch's vectorised
// float sin and exp differ from that by an ulp at some entries, and by which depends on the
// CPU's vector width, so no one table is torch's everywhere. The table is no parameter and no
// saved state (neuralforecast's 5000-row buffer is a function of E alone).
// Rows: x [B·T, C] the windows' values; mark the batch's future exogenous inputs as the models
// hold them, [B, F, steps] (window b, input f, step s at mark[(b·F + f)·steps + s]), of which
// the tokens read steps t0 .. t0 + T − 1. A chunk of a batch's windows passes row0, the index of
// its first row in the batch, so that the dropout draws the chunk's part of the batch's mask.
// Legend: B windows, T tokens per window, C value channels, F exogenous inputs, E hidden_size.
#pragma once

#include <string_view>
#include <vector>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/layers/dropout.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

// The sine/cosine table [tokens, width] described above (width even or odd, as torch's).
std::vector<double> sinusoid_positions(Index tokens, Index width);

template <class T>
struct DataEmbedding {
  struct Config {
    Index c_in = 1;         // C
    Index exog = 0;         // F (0: no temporal embedding)
    Index tokens = 0;       // T
    Index hidden_size = 0;  // E
    bool pos_embedding = true;
    double dropout = 0.1;
    uint64_t stream = 0;  // the dropout's
  };
  struct Params {
    Param<T> conv;   // [E, C, 3]
    Param<T> embed;  // [E, F]
  };
  // Where a call's exogenous inputs are: mark as above, steps per window and the first read.
  struct Mark {
    const T* data = nullptr;
    Index steps = 0;
    Index t0 = 0;
  };

  Config cfg;
  Params p;
  Dropout<T> dropout;
  std::vector<T> pe;  // [T, E]
  Buffer<T> dz;       // [B·T, E] scratch: the gradient before the dropout

  explicit DataEmbedding(Config c);

  template <class F>
  void for_each_param(F&& f) {
    f(std::string_view("value_embedding.tokenConv.weight"), p.conv);
    if (cfg.exog > 0) f(std::string_view("temporal_embedding.embed.weight"), p.embed);
  }

  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  void forward(const Ctx& ctx, ConstMat<T> x, Mark mark, MatView<T> y, Index row0 = 0);
  // The parameters' gradients accumulate; with dmark set (mark's layout), the exogenous inputs'
  // gradient is added into it. The values' gradient is not formed (the target has none).
  void backward(const Ctx& ctx, ConstMat<T> x, Mark mark, ConstMat<T> dy, T* dmark, Index row0 = 0);

  profile::Cost forward_cost(double rows) const;
  profile::Cost backward_cost(double rows) const;
};

}  // namespace shoal::layers
