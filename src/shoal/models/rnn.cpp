#include "shoal/models/rnn.h"

#include "recurrent_forecast_impl.h"

namespace shoal::models {

namespace {
constexpr std::string_view kRnnActivations[] = {"tanh", "relu"};
}  // namespace

void RNNConfig::visit(OptionVisitor& v) {
  visit_recurrent(v);
  v.choice("encoder_activation", encoder_activation, kRnnActivations,
           "Accepted as neuralforecast accepts it; its RNN runs tanh either way");
}

template class RecurrentForecast<float, RNNConfig>;
template class RecurrentForecast<double, RNNConfig>;

}  // namespace shoal::models
