// Counter-based random numbers (Philox-4x32-10, Random123). A value is a pure function of
// (seed, stream, counter), so a dropout mask is regenerated in backward instead of stored, any
// thread can produce any element, and results do not depend on the thread count.
//
// Convention: stream = which consumer (a dropout layer's id, the negative sampler, an init);
// counter = (step, element block). One Philox call yields 4 uint32, so element e of a step uses
// block e / 4, lane e % 4. The counter words are (a: 64 bits, b: low 32 bits, stream: low 32
// bits), so one (seed, stream, step) has 2^32 distinct blocks: 2^34 elements per step.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>

#include <Random123/philox.h>

#include "shoal/core/tensor.h"

namespace shoal {

// A uniform draw in [0, n) from uniform 32-bit words `next()` (Lemire's multiply-shift with
// rejection): every source of the same words gives the same draws.
template <class Next>
uint32_t uniform_below(uint32_t n, Next&& next) {
  uint64_t m = static_cast<uint64_t>(next()) * n;
  auto low = static_cast<uint32_t>(m);
  if (low < n) {
    const uint32_t threshold = static_cast<uint32_t>(-n) % n;
    while (low < threshold) {
      m = static_cast<uint64_t>(next()) * n;
      low = static_cast<uint32_t>(m);
    }
  }
  return static_cast<uint32_t>(m >> 32);
}

class Philox {
 public:
  Philox() = default;
  Philox(uint64_t seed, uint64_t stream) : seed_(seed), stream_(stream) {}

  // 4 independent 32-bit words for counter (a, b).
  std::array<uint32_t, 4> block(uint64_t a, uint64_t b) const {
    r123::Philox4x32 gen;
    r123::Philox4x32::key_type key = {
        {static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32)}};
    r123::Philox4x32::ctr_type ctr = {{static_cast<uint32_t>(a), static_cast<uint32_t>(a >> 32),
                                       static_cast<uint32_t>(b), static_cast<uint32_t>(stream_)}};
    auto r = gen(ctr, key);
    return {r.v[0], r.v[1], r.v[2], r.v[3]};
  }
  uint64_t seed() const { return seed_; }
  uint64_t stream() const { return stream_; }

 private:
  uint64_t seed_ = 0;
  uint64_t stream_ = 0;
};

// Uniform in [0, 1) with 24 random bits: exactly representable in float.
inline float u01(uint32_t x) {
  return static_cast<float>(x >> 8) * 0x1.0p-24f;
}
// Uniform in (0, 1]: safe for log().
inline double u01_open0(uint32_t x) {
  return (static_cast<double>(x >> 8) + 1.0) * 0x1.0p-24;
}

// Where a RngStream's 32-bit words come from.
//   kPhilox: shoal's own counter-based stream (seed, stream) — independent streams per consumer.
//   kTorchCpu: PyTorch's CPU generator after torch.manual_seed(seed): MT19937 seeded with the
//     seed's low 32 bits; the stream id is ignored. uniform() and uniform(lo, hi) then transform
//     the words as torch's uniform_ does for float tensors, so a model initialised in torch's
//     module order draws exactly the weights torch does (neuralforecast's random_seed).
//     torch_normal_fill() replays Tensor.normal_ (nn.Embedding's init) the same way. normal()
//     and below() keep shoal's transforms (torch's differ); nothing that must match torch uses
//     them.
enum class Generator { kPhilox, kTorchCpu };

// Sequential draws for initialisation and sampling: a stream with a running position.
class RngStream {
 public:
  RngStream(uint64_t seed, uint64_t stream, Generator generator = Generator::kPhilox)
      : philox_(seed, stream) {
    if (generator == Generator::kTorchCpu) mt_.emplace(static_cast<uint32_t>(seed));
  }
  uint32_t next_u32();
  // [0, 1): the top 24 bits of a word (Philox) or the low 24 bits (torch's uniform_).
  float uniform() {
    const uint32_t x = next_u32();
    return mt_ ? static_cast<float>(x & 0xFFFFFFu) * 0x1.0p-24f : u01(x);
  }
  // [lo, hi); torch's transform is one fused multiply-add in float.
  float uniform(float lo, float hi) {
    return mt_ ? std::fma(uniform(), hi - lo, lo) : lo + (hi - lo) * uniform();
  }
  double normal();  // N(0, 1), Box-Muller
  // kTorchCpu only: what torch's CPU `Tensor.normal_(mean, std)` writes into a contiguous float32
  // tensor of n elements, drawing the same words, so that what follows in the stream stays in
  // step with torch. torch takes one of two paths by size:
  //   n >= 16: n float uniforms (one word each, as uniform()), Box-Muller on each block of 16
  //     (element j pairs with j + 8) in float; when n % 16 != 0 the last 16 elements are drawn
  //     again (16 more words) and transformed anew. This replays the kernel that runs on any
  //     x86 CPU with AVX2 (AVX-512 ones run the AVX2 kernel too): its Cephes-polynomial log and
  //     sincos (avx_mathfun.h) evaluated lane by lane with the same float operations, so the
  //     values are torch's to the bit (torch's kernel for CPUs without AVX2 calls libm's logf,
  //     cosf and sinf instead, whose values differ from these by up to ~2e-6).
  //   n < 16: one Box-Muller pair in double per two elements, from two 53-bit uniforms of two
  //     words each (first word high); the second value of a pair is cached in the generator
  //     and used by the next element, also by the next small normal_ call (the cache survives
  //     uniform_ and large normal_ calls, as torch's does).
  void torch_normal_fill(float* data, Index n, double mean = 0.0, double std = 1.0);
  // Whether the words are torch's CPU generator's (Generator::kTorchCpu).
  bool replays_torch() const { return mt_.has_value(); }
  // Uniform integer in [0, n) without modulo bias (Lemire's method).
  uint32_t below(uint32_t n);

 private:
  Philox philox_;
  std::optional<std::mt19937> mt_;  // engaged for kTorchCpu
  uint64_t counter_ = 0;
  std::array<uint32_t, 4> buf_{};
  int used_ = 4;
  double spare_normal_ = 0.0;
  bool has_spare_ = false;
  // torch's CPUGeneratorImpl::next_double_normal_sample_: the sine half of the last
  // double Box-Muller pair of torch_normal_fill, until an element uses it.
  std::optional<double> torch_next_normal_;
};

}  // namespace shoal
