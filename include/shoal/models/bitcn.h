// BiTCN (neuralforecast.models.BiTCN): two stacks of BiTCN cells (layers/tcn_cells.h) with
// kernel size 2 and dilations 1, 2, 4, …: a backward-looking (causal) one over the input window
// with every exogenous input, and, with future exogenous inputs, a forward-looking (anti-causal)
// one over their L + H steps; then Linears along time to the horizon and an output Linear:
//   e_t = [y_t | hist_t | stat | futr_t]                     t < L      (1 + X + S + F)
//   s = Cells_bwd(dropout(lin_hist(e)))                      [L, B, Hd]  ⌈log2 L⌉ cells
//   f = Cells_fwd(dropout(lin_futr(futr)))                   [L+H, B, Hd] ⌈log2(L+H)⌉ cells
//   c = [s | f_{<L}] along channels                          [L, B, C]   C = Hd or 2·Hd
//   q = temporal_lin2(dropout(GELU(temporal_lin1(c))))      along time: L → Hd → H
//   ŷ_j = output_lin([q_j | f_{L+j}])                        [M] per horizon step j
// Univariate (N = 1); historical, future and static exogenous inputs.
// Parameters, neuralforecast's names and module order (its init order): lin_hist, net_bwd.<j>.*,
// lin_futr, net_fwd.<j>.* (with future exogenous only), temporal_lin1, temporal_lin2,
// output_lin.
// Legend: B windows, L input_size, H horizon, X/F/S hist/futr/stat exogenous sizes, Hd
// hidden_size, M outputs per forecast value.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shoal/core/options.h"
#include "shoal/layers/dropout.h"
#include "shoal/layers/linear.h"
#include "shoal/layers/tcn_cells.h"
#include "shoal/models/forecast_model.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

struct BiTCNConfig : ForecastConfig<BiTCNConfig> {
  static constexpr ForecastKind kKind{
      .name = "bitcn",
      .class_name = "BiTCN",
      .hist_exog = true,
      .futr_exog = true,
      .stat_exog = true,
      .defaults = {.windows_batch_size = 1024, .inference_windows_batch_size = 1024}};
  int64_t hidden_size = 16;
  double dropout = 0.5;

  void visit(OptionVisitor& v);
  void validate_options() const;
};

template <class T>
class BiTCN : public ForecastModel<BiTCNConfig>, public NamedLayers<BiTCN<T>> {
 public:
  explicit BiTCN(Config cfg);

  // Profiler zones "net_bwd", "net_fwd" (future exogenous), "temporal", "output".
  SHOAL_WINDOW_MODEL_MEMBERS;

  template <class F>
  void for_each_layer(F&& f) {
    f(std::string("lin_hist."), lin_hist_);
    f(std::string("net_bwd."), net_bwd_);
    if (futr_) {
      f(std::string("lin_futr."), *lin_futr_);
      f(std::string("net_fwd."), *net_fwd_);
    }
    f(std::string("temporal_lin1."), temporal1_);
    f(std::string("temporal_lin2."), temporal2_);
    f(std::string("output_lin."), output_);
  }

  // neuralforecast's layer counts: ⌈log2 L⌉ backward cells, ⌈log2(L + H)⌉ forward ones.
  static Index cells_for(Index steps);

 private:
  Index hidden() const { return cfg_.hidden_size; }
  Index channels() const { return futr_ ? 2 * hidden() : hidden(); }  // C
  Index out_in() const { return futr_ ? 3 * hidden() : hidden(); }

  bool futr_;
  layers::Linear<T> lin_hist_;
  layers::Dropout<T> drop_hist_;
  layers::TCNCells<T> net_bwd_;
  std::unique_ptr<layers::Linear<T>> lin_futr_;
  layers::Dropout<T> drop_futr_;
  std::unique_ptr<layers::TCNCells<T>> net_fwd_;
  layers::Linear<T> temporal1_, temporal2_;
  layers::Dropout<T> drop_temporal_;
  layers::Linear<T> output_;

  Buffer<T> x_;         // [L·B, 1 + X + S + F] lin_hist's input, time-major
  Buffer<T> e_, de_;    // [L·B, Hd] net_bwd's input (after dropout)
  Buffer<T> s_, ds_;    // [L·B, Hd] net_bwd's output
  Buffer<T> fx_;        // [(L+H)·B, F] lin_futr's input
  Buffer<T> ef_, def_;  // [(L+H)·B, Hd] net_fwd's input
  Buffer<T> sf_, dsf_;  // [(L+H)·B, Hd] net_fwd's output
  Buffer<T> c_, dc_;    // [L·B, C] the concatenation (future exogenous only)
  Buffer<T> p_, dp_;    // [Hd·B, C] temporal_lin1's output, before GELU
  Buffer<T> g_;         // [Hd·B, C] after GELU and dropout
  Buffer<T> q_, dq_;    // [H·B, C] temporal_lin2's output
  Buffer<T> d_, dd_;    // [H·B, 3·Hd] output_lin's input (future exogenous only)
  Buffer<T> o_, do_;    // [H·B, M]
  Buffer<T> out_;       // [B, H·M]
  profile::LayerZones zbwd_, zfwd_, ztemp_, zout_;
};

}  // namespace shoal::models
