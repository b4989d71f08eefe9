// Train/test splits of a recommender's interactions, per user, as recommender libraries make
// them (one mechanism for `shoal ncf split` and Python's shoal.split_*):
//
//   leave-last-out   each user's latest interaction (by time) is its test row; among
//                    interactions at the same latest time, the largest item row (ids sort as
//                    rows do: data/ids.h), or a random one with random_ties. Users with one
//                    interaction stay in train. This is how the NCF authors' ml-1m / ml-100k
//                    files were cut.
//   random           one interaction per user (of users with ≥ 2), chosen at random.
//   chrono           per user, the earliest floor(ratio · n) interactions (at least one; ties
//                    in time in a random order) in train, the rest in test.
//
// Random choices come from Philox with the given seed: the same data and seed give the same
// split on any machine.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace shoal::data {

enum class SplitKind { kLeaveLastOut, kRandom, kChrono };

// "leave-last-out", "random", "chrono"; throws shoal::Error naming the choices otherwise.
SplitKind split_kind(std::string_view name);

struct SplitSpec {
  SplitKind kind = SplitKind::kLeaveLastOut;
  double ratio = 0.8;        // chrono: the share of each user's interactions kept for training
  uint64_t seed = 0;         // random choices
  bool random_ties = false;  // leave-last-out: break ties in time at random (not by item)
};

// test[r] = 1 when interaction r is held out. users / items: rows (dense, ≥ 0); times: any
// ordered numbers (unused by `random`, may then be empty).
std::vector<uint8_t> split_interactions(std::span<const int32_t> users,
                                        std::span<const int32_t> items,
                                        std::span<const double> times, const SplitSpec& spec);

}  // namespace shoal::data
