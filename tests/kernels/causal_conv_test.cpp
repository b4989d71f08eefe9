// The causal convolution kernels against their *_ref twins: output channels around the SIMD
// widths (the scalar tail and none), kernel sizes 1 to 3, dilations whose shift reaches past
// the whole window (a tap that sees nothing), one step and several, batch 1 and odd batches,
// every activation, both directions (causal and anti-causal), float and double; outputs, and the
// weight, bias and input gradients accumulated onto non-zero ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "shoal/core/rng.h"
#include "shoal/kernels/causal_conv.h"

namespace shoal::kernels {
namespace causal_conv_test {

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
void check(Index steps, Index batch, Index in, Index out, Index kernel, Index dilation, ConvAct act,
           bool bias, ConvDir dir = ConvDir::kCausal) {
  RngStream rng(5, uint64_t(steps * 10000 + batch * 1000 + out * 10 + kernel));
  const Index rows = steps * batch;
  const auto w = random_vec<T>(rng, out * in * kernel, 0.5f), b = random_vec<T>(rng, out),
             x = random_vec<T>(rng, rows * in, 2.f), dy = random_vec<T>(rng, rows * out),
             init = random_vec<T>(rng, out * in * kernel);
  const CausalConv<T> c{.steps = steps,
                        .batch = batch,
                        .in = in,
                        .out = out,
                        .kernel = kernel,
                        .dilation = dilation,
                        .act = act,
                        .dir = dir,
                        .w = w.data(),
                        .b = bias ? b.data() : nullptr};
  struct Run {
    std::vector<T> y, g, dx, dw, db;
  };
  auto run = [&](bool fast) {
    Run r;
    r.y.assign(size_t(rows * out), T(3));
    r.g = dy;
    r.dx.assign(size_t(rows * in), T(7));
    r.dw = init;
    r.db.assign(init.begin(), init.begin() + out);
    if (fast) {
      std::vector<T> scratch(size_t(causal_conv_scratch(in, out, kernel)));
      causal_conv_forward<T>(c, x.data(), r.y.data(), scratch.data());
      causal_conv_backward<T>(c, x.data(), r.y.data(), r.g.data(), r.dx.data(), r.dw.data(),
                              bias ? r.db.data() : nullptr, scratch.data());
    } else {
      causal_conv_forward_ref<T>(c, x.data(), r.y.data());
      causal_conv_backward_ref<T>(c, x.data(), r.y.data(), r.g.data(), r.dx.data(), r.dw.data(),
                                  bias ? r.db.data() : nullptr);
    }
    return r;
  };
  const Run fast = run(true), ref = run(false);
  const double tol = std::is_same_v<T, float> ? 2e-5 : 1e-12;
  const auto where = ::testing::Message() << "T " << steps << " B " << batch << " I " << in << " O "
                                          << out << " K " << kernel << " d " << dilation << " act "
                                          << int(act) << " bias " << bias << " dir " << int(dir);
  EXPECT_LE(max_rel(fast.y, ref.y), tol) << where;
  EXPECT_LE(max_rel(fast.g, ref.g), tol) << where;
  EXPECT_LE(max_rel(fast.dx, ref.dx), tol) << where;
  EXPECT_LE(max_rel(fast.dw, ref.dw), tol) << where;
  EXPECT_LE(max_rel(fast.db, ref.db), tol) << where;
}

template <class T>
void sweep() {
  for (ConvDir dir : {ConvDir::kCausal, ConvDir::kAnticausal}) {
    for (ConvAct act : {ConvAct::kRelu, ConvAct::kTanh, ConvAct::kIdentity})
      for (Index out : {1, 7, 16, 19, 33})
        for (Index kernel : {1, 2, 3})
          for (Index dilation : {1, 2, 5})
            check<T>(6, 3, 4, out, kernel, dilation, act, out != 7, dir);
    check<T>(1, 1, 3, 8, 2, 1, ConvAct::kRelu, true, dir);      // one step: only the unshifted tap
    check<T>(4, 5, 1, 17, 3, 4, ConvAct::kTanh, true, dir);     // every shifted tap past the window
    check<T>(20, 9, 13, 32, 2, 16, ConvAct::kRelu, true, dir);  // neuralforecast's last dilation
  }
}

TEST(CausalConvKernel, FloatMatchesReference) {
  sweep<float>();
}
TEST(CausalConvKernel, DoubleMatchesReference) {
  sweep<double>();
}

// Causality: changing the input at step s changes no output before s.
TEST(CausalConvKernel, NoOutputSeesALaterStep) {
  const Index steps = 9, batch = 2, in = 3, out = 5, kernel = 3, dilation = 2;
  RngStream rng(3, 1);
  auto w = random_vec<double>(rng, out * in * kernel),
       x = random_vec<double>(rng, steps * batch * in);
  const CausalConv<double> c{.steps = steps,
                             .batch = batch,
                             .in = in,
                             .out = out,
                             .kernel = kernel,
                             .dilation = dilation,
                             .act = ConvAct::kIdentity,
                             .w = w.data()};
  std::vector<double> scratch(size_t(causal_conv_scratch(in, out, kernel))),
      y0(size_t(steps * batch * out)), y1(y0.size());
  causal_conv_forward<double>(c, x.data(), y0.data(), scratch.data());
  const Index s = 5;
  for (Index i = 0; i < batch * in; ++i) x[size_t(s * batch * in + i)] += 1.0;
  causal_conv_forward<double>(c, x.data(), y1.data(), scratch.data());
  for (Index r = 0; r < s * batch * out; ++r) EXPECT_EQ(y0[size_t(r)], y1[size_t(r)]) << r;
  EXPECT_NE(y0[size_t(s * batch * out)], y1[size_t(s * batch * out)]);
}

// Anti-causal is causal along reversed time with the taps reversed: y'_t of x, W equals
// y_{T−1−t} of x reversed in time, W reversed in k (padding on the right instead of the left).
TEST(CausalConvKernel, AnticausalIsCausalOnReversedTime) {
  const Index steps = 11, batch = 3, in = 4, out = 6, kernel = 3, dilation = 2;
  RngStream rng(4, 1);
  const auto w = random_vec<double>(rng, out * in * kernel), b = random_vec<double>(rng, out),
             x = random_vec<double>(rng, steps * batch * in);
  std::vector<double> wr(w.size()), xr(x.size());
  for (Index oi = 0; oi < out * in; ++oi)
    for (Index k = 0; k < kernel; ++k)
      wr[size_t(oi * kernel + k)] = w[size_t(oi * kernel + kernel - 1 - k)];
  for (Index t = 0; t < steps; ++t)
    std::copy_n(x.begin() + (steps - 1 - t) * batch * in, batch * in, xr.begin() + t * batch * in);
  CausalConv<double> c{.steps = steps,
                       .batch = batch,
                       .in = in,
                       .out = out,
                       .kernel = kernel,
                       .dilation = dilation,
                       .act = ConvAct::kTanh,
                       .dir = ConvDir::kAnticausal,
                       .w = w.data(),
                       .b = b.data()};
  std::vector<double> scratch(size_t(causal_conv_scratch(in, out, kernel))),
      ya(size_t(steps * batch * out)), yc(ya.size());
  causal_conv_forward<double>(c, x.data(), ya.data(), scratch.data());
  c.dir = ConvDir::kCausal;
  c.w = wr.data();
  causal_conv_forward<double>(c, xr.data(), yc.data(), scratch.data());
  for (Index t = 0; t < steps; ++t)
    for (Index i = 0; i < batch * out; ++i)
      EXPECT_NEAR(ya[size_t(t * batch * out + i)], yc[size_t((steps - 1 - t) * batch * out + i)],
                  1e-14)
          << t;
}

}  // namespace causal_conv_test
}  // namespace shoal::kernels
