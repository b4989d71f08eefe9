// TCN (neuralforecast.models.TCN): a stack of dilated causal convolutions (neuralforecast's
// TemporalConvolutionEncoder, layers/temporal_conv.h) over the input window with every
// exogenous input, the context adapter along time and the MLP decoder
// (models/context_forecast.h, shared with DilatedRNN). Univariate (N = 1); historical, future
// and static exogenous inputs. Parameters: neuralforecast's state_dict keys
// hist_encoder.tcn.<j>.conv.weight/.bias, context_adapter.weight/.bias,
// mlp_decoder.layers.<3k>.weight/.bias. (neuralforecast's state_dict also lists each conv under
// the alias hist_encoder.tcn.<j>.causalconv.0.*, the same tensor.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/core/options.h"
#include "shoal/layers/temporal_conv.h"
#include "shoal/models/context_forecast.h"

namespace shoal::models {

struct TCNConfig : ForecastConfig<TCNConfig>, ContextForecastOptions {
  static constexpr ForecastKind kKind{.name = "tcn",
                                      .class_name = "TCN",
                                      .hist_exog = true,
                                      .futr_exog = true,
                                      .stat_exog = true,
                                      .defaults = kRecurrentDefaults};
  static constexpr std::string_view kEncoderName = "hist_encoder";
  template <class T>
  using Encoder = layers::TemporalConv<T>;
  // Not an aggregate: GCC 12 flags the strings of `TCNConfig{}` as maybe uninitialized.
  TCNConfig() = default;

  int64_t kernel_size = 2;
  std::vector<int64_t> dilations = {1, 2, 4, 8, 16};
  int64_t encoder_hidden_size = 128;
  std::string encoder_activation = "ReLU";

  void visit(OptionVisitor& v);
  void validate_options() const;
  // The encoder of `in` input features.
  template <class T>
  typename Encoder<T>::Config encoder_config(Index in) const {
    return {.in = in,
            .out = encoder_hidden_size,
            .kernel = kernel_size,
            .dilations = dilations,
            .act = encoder_activation == "Tanh" ? kernels::ConvAct::kTanh : kernels::ConvAct::kRelu,
            .steps = input_size};
  }
};

template <class T>
using TCN = ContextForecast<T, TCNConfig>;

}  // namespace shoal::models
