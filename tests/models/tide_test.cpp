// TiDE: what is its own (its parity with neuralforecast, gradients, chunks and the rest are the
// registry's typed suite, tests/models/registry_models_test.cpp): it learns a sine, and its
// checks reject options out of range, and the temporal decoder's LayerNorm decides which layers
// train.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "shoal/core/arena.h"
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

// With layernorm and one output the temporal decoder's LayerNorm over that output makes the
// forecast Wy + b + its bias: the encoder gets no gradient. With M = 3 that LayerNorm is live
// and every layer trains.
TEST(TideMultiOutput, EveryLayerTrainsOnlyWithSeveralOutputs) {
  for (const Index outputs : {1, 3}) {
    TiDE<double>::Config cfg;
    cfg.hidden_size = 6;
    cfg.decoder_output_dim = 3;
    cfg.temporal_decoder_dim = 5;
    cfg.set_shape({.h = 4, .input_size = 7, .outputs = outputs});
    TiDE<double> model(cfg);
    const Index b = 3;
    Planner planner;
    model.plan(planner, b);
    Arena arena(std::move(planner));
    RngStream rng(2, models::kInitStream);
    model.init(rng);
    std::vector<double> y(size_t(b * 7)), dy(size_t(b * 4 * outputs), 0.5);
    for (size_t i = 0; i < y.size(); ++i) y[i] = std::sin(double(i));
    const models::ForecastInputs<double> in{.batch = b, .insample_y = y.data()};
    model.forward({}, in);
    model.backward({}, in, ConstMat<double>(dy.data(), b * 4, outputs));
    double encoder_grad = 0;
    model.for_each_param([&](const std::string& key, Param<double>& p) {
      if (key.starts_with("dense_encoder.0.lin1."))
        for (const double g : p.grad) encoder_grad += std::abs(g);
    });
    if (outputs == 1)
      EXPECT_EQ(encoder_grad, 0);
    else
      EXPECT_GT(encoder_grad, 0);
  }
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
