// The attention kernels (kernels/attention.h) against their reference twins on shapes with
// tails, masks, dropout and the strided [B, L, H, E] layout, and their gradients against
// finite differences in double.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "shoal/core/rng.h"
#include "shoal/kernels/attention.h"

namespace shoal::kernels {
namespace attention_test {

// One (batch, head)-strided tensor in neuralforecast's [B, L, H, E] layout.
template <class T>
struct Heads {
  Index b, l, h, e;
  std::vector<T> data;
  Heads(Index b_, Index l_, Index h_, Index e_, RngStream& rng)
      : b(b_), l(l_), h(h_), e(e_), data(size_t(b_ * l_ * h_ * e_)) {
    for (T& x : data) x = T(rng.uniform()) * T(2) - T(1);
  }
  AttentionOperand<T> view() { return {data.data(), h * e, l * h * e, e}; }
  AttentionInput<T> in() const { return {data.data(), h * e, l * h * e, e}; }
};

struct Case {
  Index batch, heads, lq, lk, d, dv;
  bool causal, dropout;
  std::string name() const {
    return fmt::format("B{}H{}q{}k{}d{}v{}{}{}", batch, heads, lq, lk, d, dv,
                       causal ? "causal" : "", dropout ? "drop" : "");
  }
};

// Outputs of one implementation.
template <class T>
struct Outputs {
  std::vector<T> out, probs, dq, dk, dv;
};

template <class T>
Outputs<T> run(const Case& c, bool fast, uint64_t seed) {
  RngStream rng(seed, 0);
  Heads<T> q(c.batch, c.lq, c.heads, c.d, rng), k(c.batch, c.lk, c.heads, c.d, rng),
      v(c.batch, c.lk, c.heads, c.dv, rng), go(c.batch, c.lq, c.heads, c.dv, rng),
      out(c.batch, c.lq, c.heads, c.dv, rng), dq(c.batch, c.lq, c.heads, c.d, rng),
      dk(c.batch, c.lk, c.heads, c.d, rng), dv(c.batch, c.lk, c.heads, c.dv, rng);
  const AttentionShape s{c.batch, c.heads, c.lq,     c.lk,
                         c.d,     c.dv,    c.causal, 1.0 / std::sqrt(double(c.d))};
  const size_t pairs = size_t(c.batch * c.heads * c.lq * c.lk);
  std::vector<T> probs(pairs), drop;
  if (c.dropout)
    for (size_t i = 0; i < pairs; ++i) drop.push_back(rng.uniform() < 0.2f ? T(0) : T(1.25));
  const T* m = c.dropout ? drop.data() : nullptr;
  std::vector<T> scratch(attention_scratch(s));
  if (fast) {
    attention_forward<T>(s, q.in(), k.in(), v.in(), out.view(), probs.data(), m, scratch.data());
    attention_backward<T>(s, q.in(), k.in(), v.in(), probs.data(), m, go.in(), dq.view(), dk.view(),
                          dv.view(), scratch.data());
  } else {
    attention_forward_ref<T>(s, q.in(), k.in(), v.in(), out.view(), probs.data(), m);
    attention_backward_ref<T>(s, q.in(), k.in(), v.in(), probs.data(), m, go.in(), dq.view(),
                              dk.view(), dv.view());
  }
  return {out.data, probs, dq.data, dk.data, dv.data};
}

template <class T>
void expect_near(const std::vector<T>& a, const std::vector<T>& b, T tol, const char* what,
                 const Case& c) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], tol * (T(1) + std::abs(b[i]))) << what << " " << i << " " << c.name();
}

const std::vector<Case> kCases = {
    {1, 1, 1, 1, 1, 1, false, false},     {2, 3, 7, 7, 8, 8, false, false},
    {2, 3, 7, 7, 8, 8, true, false},      {1, 4, 16, 16, 16, 16, true, true},
    {3, 2, 42, 42, 16, 24, false, true},  {2, 2, 5, 19, 12, 4, false, false},
    {2, 2, 19, 5, 12, 4, true, false},  // lk < lq, causal: the first rows see no key
    {1, 8, 64, 64, 64, 64, false, false}, {2, 16, 33, 33, 8, 8, true, true},
    {2, 2, 9, 70, 16, 8, true, true}};  // more keys than the register path takes

TEST(Attention, FloatEqualsTheReference) {
  for (const Case& c : kCases) {
    const Outputs<float> fast = run<float>(c, true, 7), ref = run<float>(c, false, 7);
    // Scores over d terms and sums over lk terms in other orders, exp within an ulp or two.
    const float tol = 2e-5f * float(std::max<Index>(c.lk, c.d)) / 8.0f + 2e-6f;
    expect_near(fast.probs, ref.probs, tol, "probs", c);
    expect_near(fast.out, ref.out, tol, "out", c);
    expect_near(fast.dq, ref.dq, 4 * tol, "dq", c);
    expect_near(fast.dk, ref.dk, 4 * tol, "dk", c);
    expect_near(fast.dv, ref.dv, tol, "dv", c);
  }
}

TEST(Attention, DoubleEqualsTheReference) {
  for (const Case& c : kCases) {
    const Outputs<double> fast = run<double>(c, true, 11), ref = run<double>(c, false, 11);
    for (const auto& [a, b, what] : {std::tuple{&fast.probs, &ref.probs, "probs"},
                                     {&fast.out, &ref.out, "out"},
                                     {&fast.dq, &ref.dq, "dq"},
                                     {&fast.dk, &ref.dk, "dk"},
                                     {&fast.dv, &ref.dv, "dv"}})
      expect_near(*a, *b, 1e-12, what, c);
  }
}

TEST(Attention, RowsAreDistributionsAndCausalRowsSeeOnlyThePast) {
  const Case c{2, 3, 9, 12, 8, 8, true, false};
  const Outputs<float> r = run<float>(c, true, 3);
  for (Index pair = 0; pair < c.batch * c.heads; ++pair)
    for (Index i = 0; i < c.lq; ++i) {
      double sum = 0;
      for (Index j = 0; j < c.lk; ++j) {
        const float p = r.probs[size_t((pair * c.lq + i) * c.lk + j)];
        if (j > i + c.lk - c.lq) {
          EXPECT_EQ(p, 0.0f) << i << " " << j;
        }
        sum += p;
      }
      EXPECT_NEAR(sum, 1.0, 1e-6);
    }
  // lk < lq: a query before the first key sees nothing and its output is 0.
  const Case few{1, 1, 6, 3, 4, 4, true, false};
  const Outputs<float> f = run<float>(few, true, 3);
  for (Index e = 0; e < 4; ++e) EXPECT_EQ(f.out[size_t(e)], 0.0f);
}

// The analytic gradients of L = Σ out ⊙ G against central differences of the reference
// forward, for every input of a small case with a causal mask and dropout.
TEST(Attention, GradientsMatchFiniteDifferencesInDouble) {
  const Case c{2, 2, 5, 6, 4, 3, true, true};
  RngStream rng(5, 0);
  Heads<double> q(c.batch, c.lq, c.heads, c.d, rng), k(c.batch, c.lk, c.heads, c.d, rng),
      v(c.batch, c.lk, c.heads, c.dv, rng), g(c.batch, c.lq, c.heads, c.dv, rng),
      out(c.batch, c.lq, c.heads, c.dv, rng), dq(c.batch, c.lq, c.heads, c.d, rng),
      dk(c.batch, c.lk, c.heads, c.d, rng), dv(c.batch, c.lk, c.heads, c.dv, rng);
  const AttentionShape s{c.batch, c.heads, c.lq, c.lk, c.d, c.dv, c.causal, 0.5};
  const size_t pairs = size_t(c.batch * c.heads * c.lq * c.lk);
  std::vector<double> probs(pairs), drop(pairs), scratch(attention_scratch(s));
  for (double& m : drop) m = rng.uniform() < 0.25f ? 0.0 : 1.0 / 0.75;
  auto loss = [&] {
    attention_forward_ref<double>(s, q.in(), k.in(), v.in(), out.view(), probs.data(), drop.data());
    double l = 0;
    for (size_t i = 0; i < out.data.size(); ++i) l += out.data[i] * g.data[i];
    return l;
  };
  loss();
  attention_forward<double>(s, q.in(), k.in(), v.in(), out.view(), probs.data(), drop.data(),
                            scratch.data());
  attention_backward<double>(s, q.in(), k.in(), v.in(), probs.data(), drop.data(), g.in(),
                             dq.view(), dk.view(), dv.view(), scratch.data());
  for (auto [x, grad, name] : {std::tuple{&q, &dq, "q"}, {&k, &dk, "k"}, {&v, &dv, "v"}}) {
    for (size_t i = 0; i < x->data.size(); ++i) {
      const double keep = x->data[i], step = 1e-6;
      x->data[i] = keep + step;
      const double up = loss();
      x->data[i] = keep - step;
      const double down = loss();
      x->data[i] = keep;
      EXPECT_NEAR(grad->data[i], (up - down) / (2 * step), 1e-8) << name << " " << i;
    }
  }
}

// Residual attention: the prior added to the scaled scores, the scores written, and the
// gradient of the scores reaching from the next layer added to dS and handed to the prior.
// The fast path against the reference, and the prior's and Q's gradients of
// L = Σ out ⊙ G + Σ S ⊙ Gs against central differences in double.
TEST(Attention, ResidualScoresMatchTheReferenceAndFiniteDifferences) {
  const Case c{2, 3, 5, 5, 4, 3, false, true};
  RngStream rng(13, 0);
  Heads<double> q(c.batch, c.lq, c.heads, c.d, rng), k(c.batch, c.lk, c.heads, c.d, rng),
      v(c.batch, c.lk, c.heads, c.dv, rng), g(c.batch, c.lq, c.heads, c.dv, rng),
      out(c.batch, c.lq, c.heads, c.dv, rng), dq(c.batch, c.lq, c.heads, c.d, rng),
      dk(c.batch, c.lk, c.heads, c.d, rng), dv(c.batch, c.lk, c.heads, c.dv, rng);
  const AttentionShape s{c.batch, c.heads, c.lq, c.lk, c.d, c.dv, false, 0.5};
  const size_t pairs = size_t(c.batch * c.heads * c.lq * c.lk);
  std::vector<double> probs(pairs), drop(pairs), prior(pairs), scores(pairs), gs(pairs),
      dprior(pairs), scratch(attention_scratch(s));
  for (double& m : drop) m = rng.uniform() < 0.25f ? 0.0 : 1.0 / 0.75;
  for (double& x : prior) x = 2.0 * rng.uniform() - 1.0;
  for (double& x : gs) x = 2.0 * rng.uniform() - 1.0;
  auto loss = [&] {
    attention_forward_ref<double>(s, q.in(), k.in(), v.in(), out.view(), probs.data(), drop.data(),
                                  {.on = true, .prior = prior.data(), .scores = scores.data()});
    double l = 0;
    for (size_t i = 0; i < out.data.size(); ++i) l += out.data[i] * g.data[i];
    for (size_t i = 0; i < pairs; ++i) l += scores[i] * gs[i];
    return l;
  };
  loss();
  const std::vector<double> ref_out = out.data, ref_scores = scores;
  std::fill(scores.begin(), scores.end(), 0.0);
  attention_forward<double>(s, q.in(), k.in(), v.in(), out.view(), probs.data(), drop.data(),
                            scratch.data(),
                            {.on = true, .prior = prior.data(), .scores = scores.data()});
  expect_near(out.data, ref_out, 1e-12, "out", c);
  expect_near(scores, ref_scores, 1e-12, "scores", c);
  attention_backward<double>(s, q.in(), k.in(), v.in(), probs.data(), drop.data(), g.in(),
                             dq.view(), dk.view(), dv.view(), scratch.data(),
                             {.on = true, .dscores = gs.data(), .dprior = dprior.data()});
  std::vector<double> ref_dprior(pairs);
  Heads<double> rdq = dq;
  attention_backward_ref<double>(s, q.in(), k.in(), v.in(), probs.data(), drop.data(), g.in(),
                                 rdq.view(), dk.view(), dv.view(),
                                 {.on = true, .dscores = gs.data(), .dprior = ref_dprior.data()});
  expect_near(dprior, ref_dprior, 1e-12, "dprior", c);
  expect_near(dq.data, rdq.data, 1e-12, "dq", c);
  auto check = [&](std::vector<double>& x, const std::vector<double>& grad, const char* name) {
    for (size_t i = 0; i < x.size(); ++i) {
      const double keep = x[i], step = 1e-6;
      x[i] = keep + step;
      const double up = loss();
      x[i] = keep - step;
      const double down = loss();
      x[i] = keep;
      EXPECT_NEAR(grad[i], (up - down) / (2 * step), 1e-8) << name << " " << i;
    }
  };
  check(prior, dprior, "prior");
  check(q.data, dq.data, "q");
  check(k.data, dk.data, "k");
}

// Float: the residual path against the reference on a wider case.
TEST(Attention, ResidualFloatEqualsTheReference) {
  const Case c{2, 4, 11, 11, 8, 8, false, false};
  RngStream rng(17, 0);
  Heads<float> q(c.batch, c.lq, c.heads, c.d, rng), k(c.batch, c.lk, c.heads, c.d, rng),
      v(c.batch, c.lk, c.heads, c.dv, rng), g(c.batch, c.lq, c.heads, c.dv, rng),
      out(c.batch, c.lq, c.heads, c.dv, rng), dq(c.batch, c.lq, c.heads, c.d, rng),
      dk(c.batch, c.lk, c.heads, c.d, rng), dv(c.batch, c.lk, c.heads, c.dv, rng);
  const AttentionShape s{c.batch, c.heads, c.lq, c.lk, c.d, c.dv, false, 0.35};
  const size_t pairs = size_t(c.batch * c.heads * c.lq * c.lk);
  std::vector<float> probs(pairs), prior(pairs), scores(pairs), rscores(pairs), dprior(pairs),
      rdprior(pairs), scratch(attention_scratch(s));
  for (float& x : prior) x = 2.0f * rng.uniform() - 1.0f;
  Heads<float> rout = out, rdq = dq, rdk = dk, rdv = dv;
  std::vector<float> rprobs(pairs);
  attention_forward<float>(s, q.in(), k.in(), v.in(), out.view(), probs.data(), nullptr,
                           scratch.data(),
                           {.on = true, .prior = prior.data(), .scores = scores.data()});
  attention_forward_ref<float>(s, q.in(), k.in(), v.in(), rout.view(), rprobs.data(), nullptr,
                               {.on = true, .prior = prior.data(), .scores = rscores.data()});
  attention_backward<float>(s, q.in(), k.in(), v.in(), probs.data(), nullptr, g.in(), dq.view(),
                            dk.view(), dv.view(), scratch.data(),
                            {.on = true, .dscores = prior.data(), .dprior = dprior.data()});
  attention_backward_ref<float>(s, q.in(), k.in(), v.in(), rprobs.data(), nullptr, g.in(),
                                rdq.view(), rdk.view(), rdv.view(),
                                {.on = true, .dscores = prior.data(), .dprior = rdprior.data()});
  const float tol = 4e-5f;
  expect_near(scores, rscores, tol, "scores", c);
  expect_near(out.data, rout.data, tol, "out", c);
  expect_near(dprior, rdprior, tol, "dprior", c);
  expect_near(dq.data, rdq.data, tol, "dq", c);
  expect_near(dk.data, rdk.data, tol, "dk", c);
}

TEST(Attention, FlopsCountBothProductsForwardAndFourBackward) {
  const AttentionShape s{2, 3, 5, 7, 4, 6, false, 0.5};
  EXPECT_DOUBLE_EQ(attention_flops(s, false), 6.0 * 2.0 * 35.0 * 10.0);
  EXPECT_DOUBLE_EQ(attention_flops(s, true), 2.0 * attention_flops(s, false));
}

}  // namespace attention_test
}  // namespace shoal::kernels
