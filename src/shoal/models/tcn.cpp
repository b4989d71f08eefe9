#include "shoal/models/tcn.h"

#include "context_forecast_impl.h"
#include "shoal/models/recurrent_forecast.h"

namespace shoal::models {

namespace {

// The encoder activations shoal runs; neuralforecast takes more (Softplus, SELU, PReLU, …):
// the others are refused by name.
constexpr std::string_view kEncoderActivations[] = {"ReLU", "Tanh"};

}  // namespace

void TCNConfig::visit(OptionVisitor& v) {
  v("kernel_size", kernel_size, "Taps of each causal convolution");
  v("dilations", dilations, "Dilation of each convolution layer, one layer per entry");
  v("encoder_hidden_size", encoder_hidden_size, "Channels of every convolution layer");
  v.choice("encoder_activation", encoder_activation, kEncoderActivations,
           "Activation after each convolution");
  v("context_size", context_size, "Accepted as neuralforecast accepts it; its TCN reads nothing");
  v("decoder_hidden_size", decoder_hidden_size, "Width of the MLP decoder's hidden layers");
  v("decoder_layers", decoder_layers, "Linear layers in the MLP decoder");
  v.choice("decoder_activation", decoder_activation, kDecoderActivations,
           "Activation after each hidden layer of the MLP decoder");
  v("inference_input_size", inference_input_size,
    "Accepted as neuralforecast accepts it; only its recurrent models read it (0: input_size)");
}

void TCNConfig::validate_options() const {
  // kernel_size 1 pads nothing, and neuralforecast's Chomp1d(0) then cuts every step away.
  if (kernel_size < 2) option_out_of_range("kernel_size", "an integer ≥ 2", double(kernel_size));
  if (dilations.empty()) option_out_of_range("dilations", "a non-empty list of integers ≥ 1", 0);
  for (int64_t d : dilations)
    if (d < 1) option_out_of_range("dilations", "a non-empty list of integers ≥ 1", double(d));
  if (encoder_hidden_size < 1)
    option_out_of_range("encoder_hidden_size", "an integer ≥ 1", double(encoder_hidden_size));
  if (decoder_layers < 1)
    option_out_of_range("decoder_layers", "an integer ≥ 1", double(decoder_layers));
  if (decoder_layers > 1 && decoder_hidden_size < 1)
    option_out_of_range("decoder_hidden_size", "an integer ≥ 1 when decoder_layers ≥ 2",
                        double(decoder_hidden_size));
  if (inference_input_size < 0)
    option_out_of_range("inference_input_size", "an integer ≥ 0 (0: input_size)",
                        double(inference_input_size));
}

template class ContextForecast<float, TCNConfig>;
template class ContextForecast<double, TCNConfig>;

}  // namespace shoal::models
