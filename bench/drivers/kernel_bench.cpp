#include "bench/drivers/kernel_bench.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shoal/core/arena.h"
#include "shoal/core/file_io.h"
#include "shoal/core/measure.h"
#include "shoal/core/rng.h"
#include "shoal/core/thread_pool.h"
#include "shoal/kernels/attention.h"
#include "shoal/kernels/gemm.h"
#include "shoal/kernels/peak.h"

namespace shoal::kernels {

namespace {

using Clock = std::chrono::steady_clock;

struct Timing {
  double median_us;
  double best_us;
};

// Median and best per-call thread CPU time in µs: each sample runs fn enough times to last
// ≥ 100 µs.
template <class F>
Timing time_us(int reps, F&& fn) {
  for (int w = 0; w < 3; ++w) fn();
  int inner = 1;
  for (;;) {
    const double t0 = thread_cpu_seconds();
    for (int r = 0; r < inner; ++r) fn();
    if (thread_cpu_seconds() - t0 >= 100e-6 || inner >= (1 << 20)) break;
    inner *= 2;
  }
  std::vector<double> samples(static_cast<size_t>(std::max(reps, 1)));
  for (auto& s : samples) {
    const double t0 = thread_cpu_seconds();
    for (int r = 0; r < inner; ++r) fn();
    s = (thread_cpu_seconds() - t0) * 1e6 / inner;
  }
  const double best = *std::min_element(samples.begin(), samples.end());
  std::nth_element(samples.begin(), samples.begin() + static_cast<long>(samples.size() / 2),
                   samples.end());
  return {samples[samples.size() / 2], best};
}

// A float buffer aligned like the arena's views (kArenaAlign), so the kernels see the row
// alignment they get in training: a 32-wide row then starts on a cache line, where a
// std::vector's 16-byte alignment would split every other vector load across two lines.
struct AlignedFloats {
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], Free> mem;
  Index size = 0;
  float* data() { return mem.get(); }
};

struct Buffers {
  AlignedFloats x, w, b, y, dy, dz, dx, dw, db;
  Buffers(Index n, Index i, Index o, RngStream& rng) {
    auto fill = [&](AlignedFloats& v, Index size) {
      const size_t bytes =
          (static_cast<size_t>(size) * sizeof(float) + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
      v.mem.reset(
          static_cast<float*>(std::aligned_alloc(kArenaAlign, std::max(bytes, kArenaAlign))));
      v.size = size;
      for (Index e = 0; e < size; ++e)
        v.mem[static_cast<size_t>(e)] = static_cast<float>(rng.uniform(-1, 1));
    };
    fill(x, n * i);
    fill(w, o * i);
    fill(b, o);
    fill(y, n * o);
    fill(dy, n * o);
    fill(dz, n * o);
    fill(dx, n * i);
    fill(dw, o * i);
    fill(db, o);
  }
};

void add_shape(BenchReport& rep, int reps, Index n, Index i, Index o) {
  RngStream rng(1, static_cast<uint64_t>(n * 131 + i * 17 + o));
  Buffers m(n, i, o, rng);
  const ConstMat<float> x(m.x.data(), n, i), w(m.w.data(), o, i);
  const MatView<float> y(m.y.data(), n, o), dz(m.dz.data(), n, o), dx(m.dx.data(), n, i);
  const MatView<float> dw(m.dw.data(), o, i);
  const ConstMat<float> dy(m.dy.data(), n, o);
  auto fwd = [&] { linear_forward<float>(x, w, m.b.data(), Act::kRelu, y, {}); };
  auto bwd = [&] {
    linear_backward<float>(x, w, y, Act::kRelu, dy, dz, dx, dw, m.db.data(), false);
  };
  const double f = 2.0 * static_cast<double>(n * i * o);
  auto row = [&](std::string name, double flops, Timing t) {
    rep.cases.push_back({std::move(name), n, i, o, flops, t.median_us, flops / t.median_us * 1e-3,
                         flops / t.median_us * 1e-3 / rep.peak_gflops, t.best_us,
                         flops / t.best_us * 1e-3 / rep.peak_gflops});
  };
  row("linear fwd (bias+relu)", f, time_us(reps, fwd));
  row("linear bwd (dx,dW,db)", 2 * f, time_us(reps, bwd));
  row("linear fwd+bwd", 3 * f, time_us(reps, [&] {
        fwd();
        bwd();
      }));
  for (GemmBackend be : {GemmBackend::kXsmm, GemmBackend::kBlas}) {
    const char* bn = be == GemmBackend::kXsmm ? "xsmm" : "blas";
    row(fmt::format("gemm NT y=x·Wᵀ {}", bn), f, time_us(reps, [&] {
          gemm<float>(be, Trans::kNo, Trans::kYes, n, o, i, 1.0f, x.data, i, w.data, i, 0.0f,
                      y.data, o);
        }));
    row(fmt::format("gemm NN dx=dz·W {}", bn), f, time_us(reps, [&] {
          gemm<float>(be, Trans::kNo, Trans::kNo, n, i, o, 1.0f, dz.data, o, w.data, i, 0.0f,
                      dx.data, i);
        }));
    row(fmt::format("gemm TN dW=dzᵀ·x {}", bn), f, time_us(reps, [&] {
          gemm<float>(be, Trans::kYes, Trans::kNo, o, i, n, 1.0f, dz.data, o, x.data, i, 0.0f,
                      dw.data, i);
        }));
  }
}

// Attention over b·h (batch, head) pairs of l tokens of width d (kernels/attention.h), in the
// [B, L, H, d] layout the models keep; the row's N is b·h, I the tokens, O the head width.
void add_attention(BenchReport& rep, int reps, Index b, Index h, Index l, Index d) {
  RngStream rng(2, static_cast<uint64_t>(b * 7919 + h * 31 + l));
  const auto n = static_cast<size_t>(b * l * h * d);
  std::vector<float> q(n), k(n), v(n), o(n), go(n), dq(n), dk(n), dv(n),
      probs(static_cast<size_t>(b * h * l * l));
  for (auto* t : {&q, &k, &v, &go})
    for (float& x : *t) x = rng.uniform(-1, 1);
  const AttentionShape shape{b, h, l, l, d, d, false, 1.0 / std::sqrt(double(d))};
  std::vector<float> scratch(attention_scratch(shape));
  auto in = [&](const std::vector<float>& t) {
    return AttentionInput<float>{t.data(), h * d, l * h * d, d};
  };
  auto out = [&](std::vector<float>& t) {
    return AttentionOperand<float>{t.data(), h * d, l * h * d, d};
  };
  auto fwd = [&] {
    attention_forward<float>(shape, in(q), in(k), in(v), out(o), probs.data(), nullptr,
                             scratch.data());
  };
  auto bwd = [&] {
    attention_backward<float>(shape, in(q), in(k), in(v), probs.data(), nullptr, in(go), out(dq),
                              out(dk), out(dv), scratch.data());
  };
  const double f = attention_flops(shape, false), fb = attention_flops(shape, true);
  auto row = [&](std::string name, double flops, Timing t) {
    rep.cases.push_back({std::move(name), b * h, l, d, flops, t.median_us,
                         flops / t.median_us * 1e-3, flops / t.median_us * 1e-3 / rep.peak_gflops,
                         t.best_us, flops / t.best_us * 1e-3 / rep.peak_gflops});
  };
  row("attention fwd", f, time_us(reps, fwd));
  row("attention fwd+bwd", f + fb, time_us(reps, [&] {
        fwd();
        bwd();
      }));
}

}  // namespace

BenchReport bench_kernels(int reps) {
  const int cpu = sched_getcpu();
  if (cpu >= 0) pin_current_thread(cpu);
  BenchReport rep;
  rep.peak_gflops = measure_peak_gflops();
  // NCF's tower at 256 positives × 5 instances (85 → 32 → 16 → 8), TSMixerx's mixer, a tiny one.
  const Index shapes[][3] = {
      {1280, 85, 32}, {1280, 32, 16}, {1280, 16, 8}, {384, 64, 64}, {384, 12, 12}};
  for (const auto& s : shapes) add_shape(rep, reps, s[0], s[1], s[2]);
  // Attention: PatchTST's defaults on a 96-step window (12 patches, 16 heads of 8: hidden 128),
  // 32 windows; iTransformer's over 158 series as tokens (8 heads of 64: hidden 512), 4 windows.
  add_attention(rep, reps, 32, 16, 12, 8);
  add_attention(rep, reps, 4, 8, 158, 64);
  return rep;
}

std::string format_report(const BenchReport& report) {
  std::string out = fmt::format("single-core FP32 peak: {:.1f} GFLOP/s\n", report.peak_gflops);
  out += fmt::format("{:<26} {:>5} {:>4} {:>4} {:>11} {:>9} {:>7} {:>9} {:>7}\n", "case", "N", "I",
                     "O", "median_us", "GFLOP/s", "% peak", "best_us", "best %");
  for (const auto& c : report.cases)
    out += fmt::format("{:<26} {:>5} {:>4} {:>4} {:>11.2f} {:>9.1f} {:>6.1f}% {:>9.2f} {:>6.1f}%\n",
                       c.name, c.n, c.i, c.o, c.median_us, c.gflops, 100 * c.peak_fraction,
                       c.best_us, 100 * c.best_fraction);
  return out;
}

void write_report_json(const BenchReport& report, const std::string& path) {
  nlohmann::json j;
  j["peak_gflops"] = report.peak_gflops;
  j["cases"] = nlohmann::json::array();
  for (const auto& c : report.cases)
    j["cases"].push_back({{"name", c.name},
                          {"n", c.n},
                          {"i", c.i},
                          {"o", c.o},
                          {"median_us", c.median_us},
                          {"gflops", c.gflops},
                          {"peak_fraction", c.peak_fraction},
                          {"best_us", c.best_us},
                          {"best_fraction", c.best_fraction}});
  write_file_atomic(path, j.dump(2) + "\n");
}

}  // namespace shoal::kernels
