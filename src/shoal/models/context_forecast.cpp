// The options TCN and DilatedRNN share (models/context_forecast.h); the model template's
// definitions are context_forecast_impl.h's, instantiated by tcn.cpp and dilated_rnn.cpp.
#include "shoal/models/context_forecast.h"

namespace shoal::models {

void ContextForecastOptions::visit_context_forecast(OptionVisitor& v) {
  v("context_size", context_size, "Accepted as neuralforecast accepts it; the model reads nothing");
  visit_mlp_decoder(v);
  v("inference_input_size", inference_input_size,
    "Accepted as neuralforecast accepts it; only its recurrent models read it (0: input_size)");
}

void ContextForecastOptions::validate_context_forecast() const {
  validate_mlp_decoder();
  if (inference_input_size < 0)
    option_out_of_range("inference_input_size", "an integer ≥ 0 (0: input_size)",
                        double(inference_input_size));
}

}  // namespace shoal::models
