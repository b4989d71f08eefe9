// The recurrent sequence kernels against their *_ref twins: every cell, hidden sizes around the
// SIMD widths (the scalar tail and none), one step and several, batch 1 and odd batches, float
// and double, an LSTM with and without a projection; forward outputs and saved state, and the
// backward's weight, bias and input gradients accumulated onto non-zero ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "shoal/core/rng.h"
#include "shoal/kernels/recurrent.h"

namespace shoal::kernels {
namespace recurrent_kernel_test {

template <class T>
std::vector<T> random_vec(RngStream& rng, Index n, float scale = 1.f) {
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& e : v) e = static_cast<T>(rng.uniform(-scale, scale));
  return v;
}

template <class T>
double max_rel(const std::vector<T>& a, const std::vector<T>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(double(a[i]) - double(b[i])) / (1.0 + std::abs(double(b[i]))));
  return worst;
}

template <class T>
void check(RnnCell cell, Index steps, Index batch, Index in, Index hd, bool bias, Index proj = 0) {
  RngStream rng(11, uint64_t(steps * 1000 + batch * 100 + hd));
  const Index g = rnn_gates(cell) * hd, rows = steps * batch, rw = proj > 0 ? proj : hd;
  const auto w_ih = random_vec<T>(rng, g * in, 0.5f), w_hh = random_vec<T>(rng, g * rw, 0.5f),
             b_ih = random_vec<T>(rng, g), b_hh = random_vec<T>(rng, g),
             x = random_vec<T>(rng, rows * in, 2.f), dh = random_vec<T>(rng, rows * rw),
             w_hr = random_vec<T>(rng, rw * hd, 0.5f);
  const RnnLayer<T> layer{.cell = cell,
                          .steps = steps,
                          .batch = batch,
                          .in = in,
                          .hidden = hd,
                          .proj = proj,
                          .w_ih = w_ih.data(),
                          .w_hh = w_hh.data(),
                          .b_ih = bias ? b_ih.data() : nullptr,
                          .b_hh = bias ? b_hh.data() : nullptr,
                          .w_hr = proj > 0 ? w_hr.data() : nullptr};
  struct Run {
    std::vector<T> h, gates, hn, c, m, dx, dw_ih, dw_hh, db_ih, db_hh, dw_hr, scratch;
  };
  const auto init = random_vec<T>(rng, g * std::max(in, hd));  // gradients accumulate onto these
  auto run = [&](bool fast) {
    Run r;
    r.h.assign(size_t(rows * rw), T(0));
    r.m.assign(size_t(rows * hd), T(0));
    r.gates.assign(size_t(rows * g), T(0));
    r.hn.assign(size_t(rows * hd), T(0));
    r.c.assign(size_t(rows * hd), T(0));
    r.dx.assign(size_t(rows * in), T(7));
    r.dw_ih.assign(init.begin(), init.begin() + g * in);
    r.dw_hh.assign(init.begin(), init.begin() + g * rw);
    if (proj > 0) r.dw_hr.assign(init.begin() + 2, init.begin() + rw * hd + 2);
    r.db_ih.assign(init.begin(), init.begin() + g);
    r.db_hh.assign(init.begin() + 1, init.begin() + g + 1);
    r.scratch.assign(size_t(std::max(rnn_forward_scratch(cell, steps, batch, hd),
                                     rnn_backward_scratch(cell, steps, batch, hd))),
                     T(3));
    const RnnSaved<T> saved{
        .gates = r.gates.data(), .hn = r.hn.data(), .c = r.c.data(), .m = r.m.data()};
    const RnnGrads<T> grads{.dw_ih = r.dw_ih.data(),
                            .dw_hh = r.dw_hh.data(),
                            .db_ih = bias ? r.db_ih.data() : nullptr,
                            .db_hh = bias ? r.db_hh.data() : nullptr,
                            .dw_hr = proj > 0 ? r.dw_hr.data() : nullptr};
    if (fast) {
      rnn_forward<T>(layer, x.data(), r.h.data(), saved, r.scratch.data());
      rnn_backward<T>(layer, x.data(), r.h.data(), saved, dh.data(), r.dx.data(), grads,
                      r.scratch.data());
    } else {
      rnn_forward_ref<T>(layer, x.data(), r.h.data(), saved, r.scratch.data());
      rnn_backward_ref<T>(layer, x.data(), r.h.data(), saved, dh.data(), r.dx.data(), grads,
                          r.scratch.data());
    }
    return r;
  };
  const Run fast = run(true), ref = run(false);
  // A few ulp from the vector σ and tanh, carried through the steps and the GEMMs' sums.
  const double tol = std::is_same_v<T, float> ? 2e-5 * double(steps + in + hd) / 8 : 1e-12;
  const std::string what = "cell " + std::to_string(int(cell)) + " T " + std::to_string(steps) +
                           " B " + std::to_string(batch) + " I " + std::to_string(in) + " Hd " +
                           std::to_string(hd) + " P " + std::to_string(proj) +
                           (bias ? "" : " no bias");
  EXPECT_LE(max_rel(fast.h, ref.h), tol) << "h, " << what;
  // Unused saved buffers stay zero in both.
  EXPECT_LE(max_rel(fast.gates, ref.gates), tol) << "gates, " << what;
  EXPECT_LE(max_rel(fast.c, ref.c), tol) << "c, " << what;
  EXPECT_LE(max_rel(fast.hn, ref.hn), tol) << "hn, " << what;
  EXPECT_LE(max_rel(fast.dx, ref.dx), tol) << "dx, " << what;
  EXPECT_LE(max_rel(fast.dw_ih, ref.dw_ih), tol) << "dw_ih, " << what;
  EXPECT_LE(max_rel(fast.dw_hh, ref.dw_hh), tol) << "dw_hh, " << what;
  EXPECT_LE(max_rel(fast.db_ih, ref.db_ih), tol) << "db_ih, " << what;
  EXPECT_LE(max_rel(fast.db_hh, ref.db_hh), tol) << "db_hh, " << what;
  EXPECT_LE(max_rel(fast.m, ref.m), tol) << "m, " << what;
  EXPECT_LE(max_rel(fast.dw_hr, ref.dw_hr), tol) << "dw_hr, " << what;
}

template <class T>
void check_all() {
  for (RnnCell cell : {RnnCell::kRnnTanh, RnnCell::kGru, RnnCell::kLstm})
    for (Index steps : {1, 2, 7})
      for (Index batch : {1, 3})
        for (Index hd : {1, 7, 8, 9, 16, 17})
          for (bool bias : {true, false}) check<T>(cell, steps, batch, hd % 2 ? 3 : 2, hd, bias);
  for (Index steps : {1, 2, 7})
    for (Index batch : {1, 3})
      for (Index hd : {7, 8, 9, 17})
        for (Index proj : {1, 3}) check<T>(RnnCell::kLstm, steps, batch, 3, hd, true, proj);
}

TEST(RecurrentKernels, FastMatchesReferenceFloat) {
  check_all<float>();
}

TEST(RecurrentKernels, FastMatchesReferenceDouble) {
  check_all<double>();
}

// The LSTM step's gate pass alone, at wide pre-activations where σ saturates.
TEST(RecurrentKernels, LstmStepSaturatesAsTheReference) {
  for (Index hd : {5, 8, 33}) {
    RngStream rng(3, uint64_t(hd));
    const Index b = 2;
    std::vector<float> g = random_vec<float>(rng, b * 4 * hd, 120.f), g_ref = g;
    const std::vector<float> cp = random_vec<float>(rng, b * hd, 3.f);
    std::vector<float> c(size_t(b * hd)), h(c.size()), c_ref(c.size()), h_ref(c.size());
    lstm_step_forward<float>(b, hd, g.data(), cp.data(), c.data(), h.data());
    lstm_step_forward_ref<float>(b, hd, g_ref.data(), cp.data(), c_ref.data(), h_ref.data());
    EXPECT_LE(max_rel(g, g_ref), 1e-6);
    EXPECT_LE(max_rel(c, c_ref), 1e-6);
    EXPECT_LE(max_rel(h, h_ref), 1e-6);
  }
}

}  // namespace recurrent_kernel_test
}  // namespace shoal::kernels
