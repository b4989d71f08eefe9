#include "shoal/models/lstm.h"

#include "recurrent_forecast_impl.h"

namespace shoal::models {

template class RecurrentForecast<float, LSTMConfig>;
template class RecurrentForecast<double, LSTMConfig>;

}  // namespace shoal::models
