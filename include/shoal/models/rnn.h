// RNN (neuralforecast.models.RNN): a stack of PyTorch nn.RNN layers (Elman: h = tanh(W_ih x +
// b_ih + W_hh h' + b_hh)) over the input window with every exogenous input, and an MLP decoding
// all horizon steps at once from the last hidden states
// (models/recurrent_forecast.h, shared with the other recurrent models). Univariate (N = 1);
// historical, future and static exogenous inputs. Parameters: hist_encoder.weight_ih_l<k>, …,
// mlp_decoder.layers.<j>.weight/.bias, upsample_sequence.* (H > L), neuralforecast's names.
// recurrent=True: no MLP decoder, forecasts step by step, proj.weight/.bias projecting the state to
// the next step's forecast (models/recurrent_forecast.h).
#pragma once

#include "shoal/models/recurrent_forecast.h"

namespace shoal::models {

struct RNNConfig : ForecastConfig<RNNConfig>, RecurrentOptions {
  static constexpr ForecastKind kKind{.name = "rnn",
                                      .class_name = "RNN",
                                      .hist_exog = true,
                                      .futr_exog = true,
                                      .stat_exog = true,
                                      .defaults = kRecurrentDefaults};
  static constexpr kernels::RnnCell kCell = kernels::RnnCell::kRnnTanh;
  // Not an aggregate: GCC 12 flags the strings of `RNNConfig{}` as maybe uninitialized.
  RNNConfig() = default;
  // neuralforecast stores it but builds its nn.RNN without it, so the cell is tanh whatever it
  // says; shoal takes the same values to the same effect.
  std::string encoder_activation = "tanh";

  void visit(OptionVisitor& v);
  void validate_options() const { validate_recurrent(); }
};

template <class T>
using RNN = RecurrentForecast<T, RNNConfig>;

}  // namespace shoal::models
