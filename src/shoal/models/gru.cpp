#include "shoal/models/gru.h"

#include "recurrent_forecast_impl.h"

namespace shoal::models {

template class RecurrentForecast<float, GRUConfig>;
template class RecurrentForecast<double, GRUConfig>;

}  // namespace shoal::models
