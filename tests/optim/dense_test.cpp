// SGD, Adam and AdamW on the flat dense prefix against scalar double references written from
// the PyTorch formulas (torch.optim.SGD / Adam / AdamW docs), over several changing steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ostream>

#include "optim_fixture.h"
#include "shoal/optim/adam.h"
#include "shoal/optim/flat.h"
#include "shoal/optim/sgd.h"

namespace shoal {
namespace dense_test {

using optim::Adam;
using optim::AdamW;
using optim::Sgd;
using testing::RefParam;
using testing::TinyModel;

constexpr int kSteps = 7;

// ---- references -------------------------------------------------------------------------

void sgd_ref(std::vector<RefParam>& refs, const Sgd<float>::Config& c, double lr, int t) {
  for (auto& r : refs)
    for (size_t i = 0; i < r.p.size(); ++i) {
      double g = r.g[i] + c.weight_decay * r.p[i];
      if (c.momentum != 0.0) {
        double& buf = r.s0[i];
        buf = t == 1 ? g : c.momentum * buf + (1.0 - c.dampening) * g;
        g = c.nesterov ? g + c.momentum * buf : buf;
      }
      r.p[i] -= lr * g;
    }
}

void adam_ref(std::vector<RefParam>& refs, const optim::AdamConfig& c, bool decoupled, double lr,
              int t) {
  const double bc1 = 1.0 - std::pow(c.beta1, t);
  const double bc2 = 1.0 - std::pow(c.beta2, t);
  for (auto& r : refs)
    for (size_t i = 0; i < r.p.size(); ++i) {
      double g = r.g[i];
      if (decoupled)
        r.p[i] *= 1.0 - lr * c.weight_decay;
      else
        g += c.weight_decay * r.p[i];
      double& m = r.s0[i];
      double& v = r.s1[i];
      double& vmax = r.s2[i];
      m = c.beta1 * m + (1.0 - c.beta1) * g;
      v = c.beta2 * v + (1.0 - c.beta2) * g * g;
      vmax = std::max(vmax, v);
      const double vhat = (c.amsgrad ? vmax : v) / bc2;
      r.p[i] -= lr * (m / bc1) / (std::sqrt(vhat) + c.eps);
    }
}

// ---- SGD --------------------------------------------------------------------------------

struct SgdCase {
  const char* name;
  Sgd<float>::Config cfg;
  friend void PrintTo(const SgdCase& c, std::ostream* os) { *os << c.name; }
};

class SgdMatchesReference : public ::testing::TestWithParam<SgdCase> {};

template <class T>
void run_sgd(const SgdCase& c) {
  typename Sgd<T>::Config cfg{c.cfg.lr, c.cfg.momentum, c.cfg.dampening, c.cfg.weight_decay,
                              c.cfg.nesterov};
  Sgd<T> opt(cfg);
  TinyModel<T> m(opt.slots());
  auto refs = testing::make_refs(m);
  for (int s = 1; s <= kSteps; ++s) {
    if (s == 4) opt.set_lr(opt.lr() * 0.5);  // a schedule changes lr between steps
    m.set_grads(s);
    testing::set_ref_grads<T>(refs, s);
    opt.step(m.arena);
    sgd_ref(refs, c.cfg, opt.lr(), s);
  }
  EXPECT_EQ(opt.step_count(), kSteps);
  EXPECT_LE(testing::max_rel_diff(m, refs), testing::tol<T>()) << c.name;
  m.expect_padding_zero();
}

TEST_P(SgdMatchesReference, Float) {
  run_sgd<float>(GetParam());
}
TEST_P(SgdMatchesReference, Double) {
  run_sgd<double>(GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    Variants, SgdMatchesReference,
    ::testing::Values(SgdCase{"plain", {.lr = 0.1}},
                      SgdCase{"weight_decay", {.lr = 0.1, .weight_decay = 0.05}},
                      SgdCase{"momentum", {.lr = 0.05, .momentum = 0.9}},
                      SgdCase{"dampening", {.lr = 0.05, .momentum = 0.8, .dampening = 0.3}},
                      SgdCase{"nesterov", {.lr = 0.05, .momentum = 0.9, .nesterov = true}},
                      SgdCase{
                          "nesterov_wd",
                          {.lr = 0.05, .momentum = 0.7, .weight_decay = 0.1, .nesterov = true}}),
    [](const auto& tc) { return std::string(tc.param.name); });

TEST(Sgd, FirstStepCopiesGradIntoBuffer) {
  // With dampening, torch's first step still sets buf = grad (not (1 - dampening)·grad).
  Sgd<double> opt({.lr = 0.1, .momentum = 0.9, .dampening = 0.5});
  TinyModel<double> m(opt.slots());
  m.set_grads(1);
  opt.step(m.arena);
  const double* buf = m.arena.optim_state<double>(0);
  for (Index i = 0; i < m.b1.grad.numel(); ++i) EXPECT_EQ(buf[m.b1.offset + i], m.b1.grad.data[i]);
}

TEST(Sgd, RejectsBadConfigs) {
  EXPECT_THROW(Sgd<float>({.nesterov = true}), Error);
  EXPECT_THROW(Sgd<float>({.momentum = 0.9, .dampening = 0.1, .nesterov = true}), Error);
  EXPECT_THROW(Sgd<float>({.lr = -1.0}), Error);
  Sgd<float> opt({.momentum = 0.9});
  TinyModel<float> m(0);  // momentum needs a slot that was not planned
  EXPECT_THROW(opt.step(m.arena), Error);
  Sgd<float> fresh({});
  EXPECT_THROW(fresh.update(m.arena, 0, 4), Error);  // update before begin_step
}

// ---- Adam / AdamW -----------------------------------------------------------------------

struct AdamCase {
  const char* name;
  bool decoupled;
  optim::AdamConfig cfg;
  friend void PrintTo(const AdamCase& c, std::ostream* os) { *os << c.name; }
};

class AdamMatchesReference : public ::testing::TestWithParam<AdamCase> {};

template <class T>
void run_adam(const AdamCase& c) {
  Adam<T> adam(c.cfg);
  AdamW<T> adamw(
      {c.cfg.lr, c.cfg.beta1, c.cfg.beta2, c.cfg.eps, c.cfg.weight_decay, c.cfg.amsgrad});
  Adam<T>& opt = c.decoupled ? adamw : adam;
  EXPECT_EQ(opt.decoupled_weight_decay(), c.decoupled);
  TinyModel<T> m(opt.slots());
  auto refs = testing::make_refs(m);
  for (int s = 1; s <= kSteps; ++s) {
    if (s == 5) opt.set_lr(opt.lr() * 0.3);
    m.set_grads(s);
    testing::set_ref_grads<T>(refs, s);
    opt.step(m.arena);
    adam_ref(refs, c.cfg, c.decoupled, opt.lr(), s);
  }
  EXPECT_LE(testing::max_rel_diff(m, refs), testing::tol<T>()) << c.name;
  m.expect_padding_zero();
}

TEST_P(AdamMatchesReference, Float) {
  run_adam<float>(GetParam());
}
TEST_P(AdamMatchesReference, Double) {
  run_adam<double>(GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    Variants, AdamMatchesReference,
    ::testing::Values(
        AdamCase{"adam_default", false, {}}, AdamCase{"adam_lr", false, {.lr = 0.05}},
        AdamCase{"adam_l2", false, {.lr = 0.02, .weight_decay = 0.1}},
        AdamCase{"adam_betas_eps", false, {.lr = 0.02, .beta1 = 0.5, .beta2 = 0.9, .eps = 1e-3}},
        AdamCase{"adam_amsgrad", false, {.lr = 0.02, .amsgrad = true}},
        AdamCase{"adam_amsgrad_l2", false, {.lr = 0.02, .weight_decay = 0.05, .amsgrad = true}},
        AdamCase{"adamw_default", true, {.weight_decay = 1e-2}},
        AdamCase{"adamw_strong", true, {.lr = 0.05, .weight_decay = 0.5}},
        AdamCase{"adamw_amsgrad", true, {.lr = 0.02, .weight_decay = 0.1, .amsgrad = true}}),
    [](const auto& tc) { return std::string(tc.param.name); });

TEST(Adam, Defaults) {
  const optim::AdamConfig a;
  EXPECT_EQ(a.lr, 1e-3);
  EXPECT_EQ(a.beta1, 0.9);
  EXPECT_EQ(a.beta2, 0.999);
  EXPECT_EQ(a.eps, 1e-8);
  EXPECT_EQ(a.weight_decay, 0.0);
  EXPECT_FALSE(a.amsgrad);
  EXPECT_EQ(optim::AdamWConfig{}.weight_decay, 1e-2);
  EXPECT_EQ(Adam<float>(a).slots(), 2);
  EXPECT_EQ(Adam<float>({.amsgrad = true}).slots(), 3);
}

TEST(Adam, EpsIsAddedAfterBiasCorrection) {
  // One step from zero state with g = 1e-6: torch gives p -= lr·g/(|g| + eps) with the bias
  // correction applied to sqrt(v) first. eps inside the correction would give a visibly
  // smaller step (eps·sqrt(1 - β2) vs eps).
  Adam<double> opt({.lr = 1.0, .eps = 1e-6});
  TinyModel<double> m(opt.slots());
  std::fill(m.w1.grad.begin(), m.w1.grad.end(), 1e-6);
  const double before = m.w1.value.data[0];
  opt.step(m.arena);
  EXPECT_NEAR(before - m.w1.value.data[0], 0.5, 1e-12);
}

TEST(Adam, ThreadSplitIsBitwiseIdentical) {
  for (bool amsgrad : {false, true}) {
    AdamW<float> a({.lr = 0.01, .amsgrad = amsgrad}), b({.lr = 0.01, .amsgrad = amsgrad});
    TinyModel<float> ma(a.slots()), mb(b.slots());
    const Index n = ma.arena.dense_param_elems();
    for (int s = 1; s <= kSteps; ++s) {
      ma.set_grads(s);
      mb.set_grads(s);
      a.step(ma.arena);
      b.begin_step();
      // Odd, unaligned pieces in a scrambled order, plus the aligned split helper's pieces.
      const Index cuts[] = {0, 3, 17, 18, 41, n};
      for (int k : {2, 0, 4, 1, 3}) b.update(mb.arena, cuts[k], cuts[k + 1]);
    }
    EXPECT_EQ(std::memcmp(ma.arena.params<float>(), mb.arena.params<float>(),
                          static_cast<size_t>(n) * sizeof(float)),
              0);
    for (int s = 0; s < a.slots(); ++s)
      EXPECT_EQ(std::memcmp(ma.arena.optim_state<float>(s), mb.arena.optim_state<float>(s),
                            static_cast<size_t>(n) * sizeof(float)),
                0);
  }
}

TEST(Flat, SplitCoversPrefixOnAlignedBoundaries) {
  for (Index n : {0, 1, 16, 17, 100, 4096 + 3})
    for (int parts : {1, 2, 3, 7}) {
      Index expect_begin = 0;
      for (int k = 0; k < parts; ++k) {
        const auto r = optim::split_flat(n, parts, k, 16);
        EXPECT_EQ(r.begin, expect_begin);
        EXPECT_LE(r.begin, r.end);
        if (k + 1 < parts) {
          EXPECT_TRUE(r.end % 16 == 0 || r.end == n);
        }
        expect_begin = r.end;
      }
      EXPECT_EQ(expect_begin, n);
    }
}

TEST(Adam, RejectsBadConfigs) {
  EXPECT_THROW(Adam<float>({.beta1 = 1.0}), Error);
  EXPECT_THROW(Adam<float>({.beta2 = -0.1}), Error);
  EXPECT_THROW(Adam<float>({.eps = -1.0}), Error);
  Adam<float> opt({.amsgrad = true});
  TinyModel<float> m(2);  // amsgrad needs 3 slots
  EXPECT_THROW(opt.step(m.arena), Error);
  Adam<float> ok({});
  TinyModel<float> m2(2);
  ok.begin_step();
  EXPECT_THROW(ok.update(m2.arena, 0, m2.arena.dense_param_elems() + 1), Error);
}

}  // namespace dense_test
}  // namespace shoal
