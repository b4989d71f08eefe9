// DilatedRNN (neuralforecast.models.DilatedRNN): groups of dilated recurrent layers
// (layers/dilated_recurrent.h: PyTorch's nn.LSTM, nn.GRU or nn.RNN cells run over every r-th
// step, a residual link around every group but the first) over the input window with every
// exogenous input, the context adapter along time and the MLP decoder
// (models/context_forecast.h, shared with TCN). Univariate (N = 1); historical, future and
// static exogenous inputs. Parameters: neuralforecast's state_dict keys
// rnn_stack.<g>.cells.<l>.weight_ih_l0, …, context_adapter.weight/.bias,
// mlp_decoder.layers.<3k>.weight/.bias.
// `dilations` is neuralforecast's list of groups, one list of dilations per group, as JSON text
// ("[[1,2],[4,8]]"; a jobs file or Python gives the nested list itself), or on the command line
// groups apart by ';' ("1,2;4,8").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/core/options.h"
#include "shoal/layers/dilated_recurrent.h"
#include "shoal/models/context_forecast.h"

namespace shoal::models {

// The recurrent models' defaults, and neuralforecast's num_lr_decays 3 of its own.
inline constexpr JobDefaults kDilatedRnnDefaults{.num_lr_decays = 3,
                                                 .input_size = -1,
                                                 .windows_batch_size = 128,
                                                 .inference_windows_batch_size = 1024,
                                                 .robust_scaler = true};

struct DilatedRNNConfig : ForecastConfig<DilatedRNNConfig>, ContextForecastOptions {
  static constexpr ForecastKind kKind{.name = "dilated_rnn",
                                      .class_name = "DilatedRNN",
                                      .hist_exog = true,
                                      .futr_exog = true,
                                      .stat_exog = true,
                                      .defaults = kDilatedRnnDefaults};
  static constexpr std::string_view kEncoderName = "rnn_stack";
  template <class T>
  using Encoder = layers::DilatedRecurrent<T>;
  // Not an aggregate: GCC 12 flags the strings of `DilatedRNNConfig{}` as maybe uninitialized.
  DilatedRNNConfig() = default;

  std::string cell_type = "LSTM";
  std::string dilations = "[[1,2],[4,8]]";
  int64_t encoder_hidden_size = 128;

  void visit(OptionVisitor& v);
  void validate_options() const;
  // `dilations` as its groups (validate_options checks it reads).
  std::vector<std::vector<int64_t>> groups() const;
  template <class T>
  typename Encoder<T>::Config encoder_config(Index in) const {
    return {.cell = cell_type == "GRU"   ? kernels::RnnCell::kGru
                    : cell_type == "RNN" ? kernels::RnnCell::kRnnTanh
                                         : kernels::RnnCell::kLstm,
            .in = in,
            .hidden = encoder_hidden_size,
            .groups = groups(),
            .steps = input_size};
  }
};

template <class T>
using DilatedRNN = ContextForecast<T, DilatedRNNConfig>;

}  // namespace shoal::models
