// TiDE: what is its own (its parity with neuralforecast, gradients, chunks and the rest are the
// registry's typed suite, tests/models/registry_models_test.cpp): it learns a sine, and its
// checks reject options out of range.
#include <gtest/gtest.h>

#include "shoal/core/error.h"
#include "shoal/models/tide.h"
#include "support/sine_training.h"

namespace shoal {
namespace tide_test {

using models::TiDE;

TEST(TideTrain, LearnsASine) {
  TiDE<float>::Config cfg;
  cfg.h = 6;
  cfg.input_size = 18;
  cfg.hidden_size = 32;
  cfg.decoder_output_dim = 4;
  cfg.temporal_decoder_dim = 16;
  cfg.dropout = 0.1;
  TiDE<float> model(cfg);
  EXPECT_TRUE(testing::loss_fell(testing::train_sine(model), 0.3));
}

TEST(TideConfig, RejectsOutOfRange) {
  TiDE<float>::Config c;
  c.h = 4;
  c.input_size = 8;
  c.validate();
  auto bad = [&](auto mutate) {
    TiDE<float>::Config b = c;
    mutate(b);
    EXPECT_THROW(b.validate(), Error);
  };
  bad([](auto& b) { b.hidden_size = 0; });
  bad([](auto& b) { b.dropout = 1.0; });
  bad([](auto& b) { b.num_decoder_layers = 0; });
}

}  // namespace tide_test
}  // namespace shoal
