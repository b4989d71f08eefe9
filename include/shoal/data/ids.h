// Users' and items' ids as a recommender's users write them (any integers, or strings) ↔ the
// dense rows 0..n-1 of the model's tables, which are sized to the distinct ids only.
//
// Readers add each id as its text (IdMapBuilder::add gives a provisional row at once, so a
// file is read in one pass); finish() fixes the order: when every id is an integer (as
// pandas reads such a column) rows follow the integers ascending, else the strings in byte
// order — the order Python's shoal.recsys.IdMap gives the same ids, so a model saved from
// either side maps ids to the same rows.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "shoal/core/tensor.h"

namespace shoal::data {

class IdMap {
 public:
  IdMap() = default;
  static IdMap of_integers(std::vector<int64_t> ids);  // ids distinct, in row order
  static IdMap of_strings(std::vector<std::string> ids);

  Index size() const;
  bool integers() const { return integers_; }
  // The row of an id written as text, or -1 when the map does not hold it ("12" and "012"
  // name the same integer id).
  int32_t find(std::string_view text) const;
  std::string text(Index row) const;  // the id as text
  const std::vector<int64_t>& integer_ids() const { return ints_; }
  const std::vector<std::string>& string_ids() const { return strings_; }

 private:
  bool integers_ = true;
  std::vector<int64_t> ints_;
  std::vector<std::string> strings_;
  std::unordered_map<int64_t, int32_t> int_rows_;
  std::unordered_map<std::string, int32_t> string_rows_;
};

// Parses a whole token as a 64-bit integer (an optional sign, digits).
bool parse_integer_id(std::string_view text, int64_t& out);

class IdMapBuilder {
 public:
  // A provisional row for the id (the same for the same text), in first-seen order.
  int32_t add(std::string_view text);
  Index size() const { return static_cast<Index>(texts_.size()); }
  // The final map, and remap[provisional row] = final row.
  IdMap finish(std::vector<int32_t>& remap) const;

 private:
  std::vector<std::string> texts_;
  std::unordered_map<std::string, int32_t> rows_;
};

}  // namespace shoal::data
