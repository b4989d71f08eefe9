#include "shoal/models/tcn.h"

#include "context_forecast_impl.h"

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
  visit_context_forecast(v);
}

void TCNConfig::validate_options() const {
  // kernel_size 1 pads nothing, and neuralforecast's Chomp1d(0) then cuts every step away.
  if (kernel_size < 2) option_out_of_range("kernel_size", "an integer ≥ 2", double(kernel_size));
  if (dilations.empty()) option_out_of_range("dilations", "a non-empty list of integers ≥ 1", 0);
  for (int64_t d : dilations)
    if (d < 1) option_out_of_range("dilations", "a non-empty list of integers ≥ 1", double(d));
  if (encoder_hidden_size < 1)
    option_out_of_range("encoder_hidden_size", "an integer ≥ 1", double(encoder_hidden_size));
  validate_context_forecast();
}

template class ContextForecast<float, TCNConfig>;
template class ContextForecast<double, TCNConfig>;

}  // namespace shoal::models
