// The distinct rows of one side (users or items) of a set of NCF instances, for the factored
// first layer (models/ncf.h): the list of distinct ids, each id's index in it (its slot), and
// per listed row its projection through the first layer's columns of that side, the sum of dz
// over the instances of the row, its table gradients and its GMF table gradient sum.
// Legend: R the side's table rows, M the capacity (most distinct rows), L1 the first tower
// layer's width, E = L0/2 its columns of the side, F the GMF factors.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <string>

#include "shoal/core/arena.h"

namespace shoal::models {

// The next generation of a stamp array [rows] (a row is marked when its stamp equals it); the
// stamps are cleared when the generations wrap.
template <class Id>
Id next_generation(Id* stamp, Index rows, Id& generation) {
  if (generation == std::numeric_limits<Id>::max() || generation == 0) {
    std::fill_n(stamp, rows, Id(0));
    generation = 0;
  }
  return ++generation;
}

template <class T>
struct NcfRowSet {
  using Id = int32_t;
  // The rows' dz sums (and their table gradients) are padded with zero rows to a multiple of
  // kRowBlock (see Ncf::rows_backward).
  static constexpr Index kRowBlock = 32;
  static Index padded(Index m) { return (m + kRowBlock - 1) / kRowBlock * kRowBlock; }

  Buffer<Id> slot;      // [R]: row r is list[slot[r]] when stamp[r] == generation
  Buffer<Id> stamp;     // [R]: the generation of the set that last listed row r
  Buffer<Id> list;      // [M + 1]: the distinct rows (see list_ids)
  Buffer<T> proj;       // [M, L1]: their embeddings · W_partᵀ
  Buffer<T> dz;         // [padded M, L1]: Σ of dz over the set's instances of the row
  Buffer<T> row_grads;  // [padded M, E]: dZ·W_part, the rows' table gradients
  Buffer<T> gmf_grads;  // [M, F]: the rows' GMF table gradients (F > 0)
  Index count = 0;
  bool ascending = false;  // list is in ascending order (a sweep of the table)
  bool dz_clear = false;   // dz is all zeros (see Ncf::open_rows)
  Id generation = 0;       // 0: stamps not yet cleared

  // Buffers named `name` + "slot", ...; capacity min(max_ids, R).
  void plan(Planner& planner, const std::string& name, Index table_rows, Index max_ids, Index l1,
            Index e, Index f) {
    const Index cap = std::min(max_ids, table_rows), rows = padded(cap);
    planner.buffer(slot, Region::kScratch, name + "slot", {table_rows});
    planner.buffer(stamp, Region::kScratch, name + "stamp", {table_rows});
    planner.buffer(list, Region::kScratch, name + "list", {cap + 1});
    planner.buffer(proj, Region::kScratch, name + "proj", {cap, l1});
    planner.buffer(dz, Region::kScratch, name + "dz", {rows, l1});
    planner.buffer(row_grads, Region::kScratch, name + "row_grads", {rows, e});
    if (f > 0) planner.buffer(gmf_grads, Region::kScratch, name + "gmf_grads", {cap, f});
  }
  // list[0, count) = the distinct ids, slot[id] = an id's index there (ncf_row_set.cpp).
  void list_ids(std::span<const Id> ids);
  // stamp[id] = a new generation for the ids; no list (count 0).
  void stamp_ids(std::span<const Id> ids);
};

extern template struct NcfRowSet<float>;
extern template struct NcfRowSet<double>;

}  // namespace shoal::models
