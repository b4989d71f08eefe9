// NBEATS: what is its own (its parity with neuralforecast, gradients, chunks and the rest are
// the registry's typed suite, tests/models/registry_models_test.cpp): it learns a sine, and its
// checks reject what neuralforecast rejects.
#include <gtest/gtest.h>

#include "shoal/core/error.h"
#include "shoal/models/nbeats.h"
#include "support/sine_training.h"

namespace shoal {
namespace nbeats_test {

using models::NBEATS;

TEST(NbeatsTrain, LearnsASine) {
  NBEATS<float>::Config cfg;
  cfg.h = 6;
  cfg.input_size = 18;
  cfg.mlp_units = {32, 32, 32, 32};
  NBEATS<float> model(cfg);
  EXPECT_TRUE(testing::loss_fell(testing::train_sine(model), 0.3));
}

TEST(NbeatsConfig, RejectsWhatNeuralforecastRejects) {
  NBEATS<float>::Config c;
  c.h = 4;
  c.input_size = 8;
  c.validate();
  auto bad = [&](auto mutate) {
    NBEATS<float>::Config b = c;
    mutate(b);
    EXPECT_THROW(b.validate(), Error);
  };
  bad([](auto& b) { b.stack_types = {"exogenous", "trend", "seasonality"}; });
  bad([](auto& b) { b.n_blocks = {1, 1}; });
  bad([](auto& b) { b.h = 1; });  // trend and seasonality need h > 1
  bad([](auto& b) { b.mlp_units = {8, 8, 4, 4}; });
  bad([](auto& b) { b.dropout_prob_theta = 0.1; });
  bad([](auto& b) { b.basis = "spline"; });
  bad([](auto& b) {
    b.basis = "linear_hat";
    b.n_basis = 0;
  });
  NBEATS<float>::Config one = c;
  one.h = 1;
  one.stack_types = {"identity"};
  one.n_blocks = {2};
  one.validate();
}

}  // namespace nbeats_test
}  // namespace shoal
