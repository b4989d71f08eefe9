// GRU (neuralforecast.models.GRU): a stack of PyTorch nn.GRU layers (reset, update and candidate
// gates, r z n) over the input window with every exogenous input, and an MLP decoding all
// horizon steps at once from the last hidden states
// (models/recurrent_forecast.h, shared with the other recurrent models). Univariate (N = 1);
// historical, future and static exogenous inputs. Parameters: hist_encoder.weight_ih_l<k>, …,
// mlp_decoder.layers.<j>.weight/.bias, upsample_sequence.* (H > L), neuralforecast's names.
// recurrent=True: no MLP decoder, forecasts step by step, proj.weight/.bias projecting the state to
// the next step's forecast (models/recurrent_forecast.h).
#pragma once

#include "shoal/models/recurrent_forecast.h"

namespace shoal::models {

struct GRUConfig : ForecastConfig<GRUConfig>, RecurrentOptions {
  static constexpr ForecastKind kKind{.name = "gru",
                                      .class_name = "GRU",
                                      .hist_exog = true,
                                      .futr_exog = true,
                                      .stat_exog = true,
                                      .defaults = kRecurrentDefaults};
  static constexpr kernels::RnnCell kCell = kernels::RnnCell::kGru;
  GRUConfig() { encoder_hidden_size = 200; }

  void visit(OptionVisitor& v) { visit_recurrent(v); }
  void validate_options() const { validate_recurrent(); }
};

template <class T>
using GRU = RecurrentForecast<T, GRUConfig>;

}  // namespace shoal::models
