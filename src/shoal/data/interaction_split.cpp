#include "shoal/data/interaction_split.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "shoal/core/error.h"
#include "shoal/core/rng.h"

namespace shoal::data {
namespace {

// One random 64-bit key per interaction (ties broken by the row).
std::vector<uint64_t> random_keys(size_t n, uint64_t seed) {
  RngStream rng(seed, 23);
  std::vector<uint64_t> k(n);
  for (auto& v : k) v = uint64_t(rng.next_u32()) << 32 | rng.next_u32();
  return k;
}

}  // namespace

SplitKind split_kind(std::string_view name) {
  if (name == "leave-last-out") return SplitKind::kLeaveLastOut;
  if (name == "random") return SplitKind::kRandom;
  if (name == "chrono") return SplitKind::kChrono;
  throw Error(fmt::format("unknown split '{}'", name),
              ErrorContext{.field = "split",
                           .expected = "leave-last-out, random or chrono",
                           .actual = std::string(name)});
}

std::vector<uint8_t> split_interactions(std::span<const int32_t> users,
                                        std::span<const int32_t> items,
                                        std::span<const double> times, const SplitSpec& spec) {
  const size_t n = users.size();
  const bool timed = spec.kind != SplitKind::kRandom;
  SHOAL_CHECK(items.size() == n && (!timed || times.size() == n),
              "split: {} users, {} items, {} times", n, items.size(), times.size());
  SHOAL_CHECK(spec.kind != SplitKind::kChrono || (spec.ratio > 0 && spec.ratio < 1),
              "split: ratio must be in (0, 1), got {}", spec.ratio);
  for (size_t r = 0; r < n; ++r)
    SHOAL_CHECK(users[r] >= 0 && items[r] >= 0, "split: negative row at interaction {}", r);
  for (size_t r = 0; timed && r < n; ++r)
    SHOAL_CHECK(std::isfinite(times[r]), "split: time of interaction {} is not finite", r);
  const std::vector<uint64_t> key = random_keys(n, spec.seed);
  // Each user's interactions, in the order that puts the test rows last.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  auto tie = [&](size_t r) -> uint64_t {
    if (spec.kind == SplitKind::kLeaveLastOut && !spec.random_ties) return uint64_t(items[r]);
    return key[r];
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (users[a] != users[b]) return users[a] < users[b];
    if (timed && times[a] != times[b]) return times[a] < times[b];
    return tie(a) < tie(b);
  });
  std::vector<uint8_t> test(n, 0);
  for (size_t lo = 0; lo < n;) {
    size_t hi = lo;
    while (hi < n && users[order[hi]] == users[order[lo]]) ++hi;
    const size_t count = hi - lo;
    if (count > 1) {
      if (spec.kind == SplitKind::kChrono) {
        const auto keep = std::max<size_t>(
            1, static_cast<size_t>(std::floor(static_cast<double>(count) * spec.ratio)));
        for (size_t i = lo + keep; i < hi; ++i) test[order[i]] = 1;
      } else {
        test[order[hi - 1]] = 1;
      }
    }
    lo = hi;
  }
  return test;
}

}  // namespace shoal::data
