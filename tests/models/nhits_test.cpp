// NHITS: what is its own (its parity with neuralforecast, gradients, chunks and the rest are the
// registry's typed suite, tests/models/registry_models_test.cpp): it learns a sine, and its
// checks reject what neuralforecast rejects.
#include <gtest/gtest.h>

#include "shoal/core/error.h"
#include "shoal/models/nhits.h"
#include "support/sine_training.h"

namespace shoal {
namespace nhits_test {

using models::NHITS;

TEST(NhitsTrain, LearnsASine) {
  NHITS<float>::Config cfg;
  cfg.h = 6;
  cfg.input_size = 18;
  cfg.mlp_units = {32, 32, 32, 32};
  cfg.dropout_prob_theta = 0.1;
  NHITS<float> model(cfg);
  EXPECT_TRUE(testing::loss_fell(testing::train_sine(model), 0.3));
}

TEST(NhitsConfig, RejectsWhatNeuralforecastRejects) {
  NHITS<float>::Config c;
  c.h = 4;
  c.input_size = 8;
  c.validate();
  auto bad = [&](auto mutate) {
    NHITS<float>::Config b = c;
    mutate(b);
    EXPECT_THROW(b.validate(), Error);
  };
  bad([](auto& b) { b.stack_types = {"trend", "identity", "identity"}; });
  bad([](auto& b) { b.n_blocks = {1, 1}; });
  bad([](auto& b) { b.mlp_units = {8, 8, 4}; });
  bad([](auto& b) { b.mlp_units = {8, 8, 4, 4}; });  // the pairs do not chain
  bad([](auto& b) { b.n_pool_kernel_size = {0, 2, 1}; });
  bad([](auto& b) { b.dropout_prob_theta = 1.0; });
  bad([](auto& b) { b.activation = "GELU"; });
}

}  // namespace nhits_test
}  // namespace shoal
