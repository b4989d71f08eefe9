// LSTM (neuralforecast.models.LSTM): a stack of PyTorch nn.LSTM layers (input, forget, cell and
// output gates, i f g o, and a cell state beside h) over the input window with every exogenous
// input, and an MLP decoding all horizon steps at once from the last hidden states
// (models/recurrent_forecast.h, shared with the other recurrent models). Univariate (N = 1);
// historical, future and static exogenous inputs. Parameters: hist_encoder.weight_ih_l<k>, …,
// mlp_decoder.layers.<j>.weight/.bias, upsample_sequence.* (H > L), neuralforecast's names.
// recurrent=True: no MLP decoder, forecasts step by step, hist_encoder.weight_hr_l<k> (torch's
// proj_size) projecting the state to the next step's forecast (models/recurrent_forecast.h).
#pragma once

#include "shoal/models/recurrent_forecast.h"

namespace shoal::models {

struct LSTMConfig : ForecastConfig<LSTMConfig>, RecurrentOptions {
  static constexpr ForecastKind kKind{.name = "lstm",
                                      .class_name = "LSTM",
                                      .hist_exog = true,
                                      .futr_exog = true,
                                      .stat_exog = true,
                                      .defaults = kRecurrentDefaults};
  static constexpr kernels::RnnCell kCell = kernels::RnnCell::kLstm;
  // Not an aggregate: GCC 12 flags the strings of `LSTMConfig{}` as maybe uninitialized.
  LSTMConfig() = default;

  void visit(OptionVisitor& v) { visit_recurrent(v); }
  void validate_options() const { validate_recurrent(); }
};

template <class T>
using LSTM = RecurrentForecast<T, LSTMConfig>;

}  // namespace shoal::models
