#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numbers>
#include <vector>

#include "shoal/train/mlp_trainer.h"
#include "support/alloc_counter.h"

namespace shoal {
namespace mlp_trainer_test {

// Friedman #1 (as in examples/mlp/sample.csv), generated in memory.
struct Problem {
  std::vector<double> x, y;
  Index rows;
  explicit Problem(Index n, uint64_t seed = 11) : rows(n) {
    RngStream rng(seed, 3);
    for (Index r = 0; r < n; ++r) {
      double v[10];
      for (double& e : v) e = rng.uniform();
      x.insert(x.end(), v, v + 10);
      y.push_back(10 * std::sin(std::numbers::pi * v[0] * v[1]) + 20 * (v[2] - 0.5) * (v[2] - 0.5) +
                  10 * v[3] + 5 * v[4] + 0.5 * rng.normal());
    }
  }
  ConstMat<double> xs() const { return {x.data(), rows, 10}; }
  ConstMat<double> ys() const { return {y.data(), rows, 1}; }
};

const models::Mlp<float>::Config kModel{.in = 10, .hidden = {32, 32}, .out = 1};

std::vector<float> params_of(train::MlpTrainer& t) {
  const float* p = t.arena().params<float>();
  return {p, p + t.arena().param_elems()};
}

TEST(MlpTrainer, LossFallsAndModelFitsHeldOutData) {
  Problem train_set(1024), test_set(256, 99);
  train::MlpTrainer t(kModel, {.batch_size = 32, .lr = 3e-3, .seed = 5, .threads = 2},
                      train_set.xs(), train_set.ys());
  const double before = t.evaluate(test_set.xs(), test_set.ys()).mse;
  double first = 0, last = 0;
  for (int e = 0; e < 25; ++e) {
    const auto r = t.train_epoch();
    if (e == 0) first = r.train_loss;
    last = r.train_loss;
  }
  const auto m = t.evaluate(test_set.xs(), test_set.ys());
  EXPECT_LT(last, 0.3 * first);
  EXPECT_LT(m.mse, 0.2 * before);
  EXPECT_GT(m.r2, 0.85) << "held-out mse " << m.mse;
}

TEST(MlpTrainer, SameSeedAndThreadsGiveBitwiseIdenticalWeights) {
  Problem p(300);
  for (int threads : {1, 2, 3}) {
    train::MlpTrainer a(kModel, {.batch_size = 20, .seed = 3, .threads = threads}, p.xs(), p.ys());
    train::MlpTrainer b(kModel, {.batch_size = 20, .seed = 3, .threads = threads}, p.xs(), p.ys());
    for (int e = 0; e < 3; ++e) {
      a.train_epoch();
      b.train_epoch();
    }
    const auto wa = params_of(a), wb = params_of(b);
    ASSERT_EQ(wa.size(), wb.size());
    EXPECT_EQ(std::memcmp(wa.data(), wb.data(), wa.size() * sizeof(float)), 0)
        << "threads=" << threads;
  }
  // A different seed must give different weights (the check above can fail).
  train::MlpTrainer c(kModel, {.batch_size = 20, .seed = 4, .threads = 1}, p.xs(), p.ys());
  train::MlpTrainer d(kModel, {.batch_size = 20, .seed = 3, .threads = 1}, p.xs(), p.ys());
  c.train_epoch();
  d.train_epoch();
  EXPECT_NE(params_of(c), params_of(d));
}

TEST(AllocCounter, SeesAllocations) {
  testing::AllocCounter counter;
  auto* v = new std::vector<int>(100);
  void* raw = std::malloc(64);
  std::free(raw);
  delete v;
  EXPECT_GE(counter.count(), 2);  // the counter behind the zero-allocation test works
}

TEST(MlpTrainer, NoHeapAllocationInTrainingStepsAfterWarmup) {
  Problem p(256);
  for (int threads : {1, 2}) {
    train::MlpTrainer t(kModel, {.batch_size = 16, .seed = 1, .threads = threads}, p.xs(), p.ys());
    t.train_epoch();  // warm-up: JIT kernels are generated on first use of a shape
    testing::AllocCounter counter;
    t.train_epoch();
    t.train_epoch();
    EXPECT_EQ(counter.count(), 0) << "threads=" << threads;
  }
}

TEST(MlpTrainer, RejectsMismatchedData) {
  Problem p(10);
  std::vector<double> y_short(5, 0.0);
  EXPECT_THROW(train::MlpTrainer(kModel, {}, p.xs(), ConstMat<double>(y_short.data(), 5, 1)),
               Error);
  EXPECT_THROW(train::MlpTrainer({.in = 3, .hidden = {4}, .out = 1}, {}, p.xs(), p.ys()), Error);
  EXPECT_THROW(train::MlpTrainer(kModel, {.batch_size = 0}, p.xs(), p.ys()), Error);
}

}  // namespace mlp_trainer_test
}  // namespace shoal
