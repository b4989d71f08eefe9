// The options the recurrent models share (models/recurrent_forecast.h); the model template's
// definitions are recurrent_forecast_impl.h's, instantiated by rnn.cpp, gru.cpp and lstm.cpp.
#include "shoal/models/recurrent_forecast.h"

namespace shoal::models {

void RecurrentOptions::visit_recurrent(OptionVisitor& v) {
  v("encoder_n_layers", encoder_n_layers, "Recurrent layers in the encoder");
  v("encoder_hidden_size", encoder_hidden_size, "Hidden state size of the recurrent layers");
  v("encoder_bias", encoder_bias, "Biases b_ih and b_hh in the recurrent layers");
  v("encoder_dropout", encoder_dropout, "Dropout between recurrent layers");
  visit_mlp_decoder(v);
  v("recurrent", recurrent,
    "Forecast step by step, each forecast fed back as the next input (false: all horizon steps "
    "at once from an MLP decoder)");
  v("h_train", h_train, "Forecast steps per training window with recurrent=true");
  v("inference_input_size", inference_input_size,
    "Input steps at inference with recurrent=true (0: input_size)");
}

void RecurrentOptions::validate_recurrent() const {
  if (encoder_n_layers < 1)
    option_out_of_range("encoder_n_layers", "an integer ≥ 1", double(encoder_n_layers));
  if (encoder_hidden_size < 1)
    option_out_of_range("encoder_hidden_size", "an integer ≥ 1", double(encoder_hidden_size));
  if (!(encoder_dropout >= 0 && encoder_dropout < 1))
    option_out_of_range("encoder_dropout", "a probability in [0, 1)", encoder_dropout);
  validate_mlp_decoder();
  if (h_train < 1) option_out_of_range("h_train", "an integer ≥ 1", double(h_train));
  if (inference_input_size < 0)
    option_out_of_range("inference_input_size", "an integer ≥ 0 (0: input_size)",
                        double(inference_input_size));
}

}  // namespace shoal::models
