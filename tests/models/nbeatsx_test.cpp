// NBEATSx: what is its own (its parity with neuralforecast, gradients, chunks and the rest are
// the registry's typed suite, tests/models/registry_models_test.cpp): its checks reject what
// neuralforecast rejects.
#include <gtest/gtest.h>

#include "shoal/core/error.h"
#include "shoal/models/nbeatsx.h"

namespace shoal {
namespace nbeatsx_test {

using models::NBEATSx;

TEST(NbeatsxConfig, RejectsWhatNeuralforecastRejects) {
  NBEATSx<float>::Config c;
  c.h = 4;
  c.input_size = 8;
  c.validate();
  auto bad = [&](auto mutate) {
    NBEATSx<float>::Config b = c;
    mutate(b);
    EXPECT_THROW(b.validate(), Error);
  };
  bad([](auto& b) { b.stack_types = {"mystery", "trend", "seasonality"}; });
  bad([](auto& b) { b.h = 1; });
  bad([](auto& b) { b.dropout_prob_theta = 1.0; });
  NBEATSx<float>::Config x = c;
  x.stack_types = {"exogenous"};
  x.n_blocks = {1};
  EXPECT_THROW(NBEATSx<float>{x}, Error);  // no future or static exogenous to expand on
}

}  // namespace nbeatsx_test
}  // namespace shoal
