// The windowed forecasting models, listed once: train/forecast_registry.cpp registers each (its
// name, neuralforecast class, kind and defaults from its Config's kKind), in this order, and the
// typed suite of tests/models/registry_models_test.cpp runs over the same list. A new model adds
// its line here.
#pragma once

#include "shoal/models/bitcn.h"
#include "shoal/models/dilated_rnn.h"
#include "shoal/models/dlinear.h"
#include "shoal/models/gru.h"
#include "shoal/models/itransformer.h"
#include "shoal/models/lstm.h"
#include "shoal/models/mlp_forecast.h"
#include "shoal/models/mlp_multivariate.h"
#include "shoal/models/nbeats.h"
#include "shoal/models/nbeatsx.h"
#include "shoal/models/nhits.h"
#include "shoal/models/nlinear.h"
#include "shoal/models/patchtst.h"
#include "shoal/models/rnn.h"
#include "shoal/models/tcn.h"
#include "shoal/models/tide.h"
#include "shoal/models/tsmixer.h"
#include "shoal/models/tsmixerx.h"
#include "shoal/models/vanilla_transformer.h"

namespace shoal::models {

// List<Model<T>...> over the models: e.g. ForecastModels<::testing::Types, double>.
template <template <class...> class List, class T>
using ForecastModels =
    List<TSMixerx<T>, TSMixer<T>, NLinear<T>, MlpForecast<T>, DLinear<T>, MlpMultivariate<T>,
         NHITS<T>, NBEATS<T>, NBEATSx<T>, TiDE<T>, RNN<T>, GRU<T>, LSTM<T>, TCN<T>, DilatedRNN<T>,
         ITransformer<T>, BiTCN<T>, PatchTST<T>, VanillaTransformer<T>>;

}  // namespace shoal::models
