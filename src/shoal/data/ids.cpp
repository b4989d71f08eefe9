#include "shoal/data/ids.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <numeric>

#include "shoal/core/error.h"

namespace shoal::data {

bool parse_integer_id(std::string_view text, int64_t& out) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size();
}

IdMap IdMap::of_integers(std::vector<int64_t> ids) {
  SHOAL_CHECK(ids.size() < size_t(std::numeric_limits<int32_t>::max()), "{} ids: too many",
              ids.size());
  IdMap m;
  m.integers_ = true;
  m.ints_ = std::move(ids);
  m.int_rows_.reserve(m.ints_.size());
  for (size_t r = 0; r < m.ints_.size(); ++r)
    SHOAL_CHECK(m.int_rows_.emplace(m.ints_[r], int32_t(r)).second, "id {} appears twice",
                m.ints_[r]);
  return m;
}

IdMap IdMap::of_strings(std::vector<std::string> ids) {
  SHOAL_CHECK(ids.size() < size_t(std::numeric_limits<int32_t>::max()), "{} ids: too many",
              ids.size());
  IdMap m;
  m.integers_ = false;
  m.strings_ = std::move(ids);
  m.string_rows_.reserve(m.strings_.size());
  for (size_t r = 0; r < m.strings_.size(); ++r)
    SHOAL_CHECK(m.string_rows_.emplace(m.strings_[r], int32_t(r)).second, "id '{}' appears twice",
                m.strings_[r]);
  return m;
}

Index IdMap::size() const {
  return static_cast<Index>(integers_ ? ints_.size() : strings_.size());
}

int32_t IdMap::find(std::string_view text) const {
  if (integers_) {
    int64_t v = 0;
    if (!parse_integer_id(text, v)) return -1;
    const auto it = int_rows_.find(v);
    return it == int_rows_.end() ? -1 : it->second;
  }
  const auto it = string_rows_.find(std::string(text));
  return it == string_rows_.end() ? -1 : it->second;
}

std::string IdMap::text(Index row) const {
  return integers_ ? std::to_string(ints_[size_t(row)]) : strings_[size_t(row)];
}

int32_t IdMapBuilder::add(std::string_view text) {
  const auto it = rows_.find(std::string(text));
  if (it != rows_.end()) return it->second;
  SHOAL_CHECK(texts_.size() < size_t(std::numeric_limits<int32_t>::max()) - 1,
              "more than 2^31 distinct ids");
  const auto row = static_cast<int32_t>(texts_.size());
  texts_.emplace_back(text);
  rows_.emplace(texts_.back(), row);
  return row;
}

IdMap IdMapBuilder::finish(std::vector<int32_t>& remap) const {
  const size_t n = texts_.size();
  std::vector<int64_t> values(n);
  bool integers = true;
  for (size_t i = 0; i < n && integers; ++i) integers = parse_integer_id(texts_[i], values[i]);
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  remap.assign(n, -1);
  if (integers) {
    // Distinct texts may name one integer ("7", "07"): they share a row.
    std::sort(order.begin(), order.end(),
              [&](int32_t a, int32_t b) { return values[size_t(a)] < values[size_t(b)]; });
    std::vector<int64_t> ids;
    for (int32_t i : order) {
      if (ids.empty() || ids.back() != values[size_t(i)]) ids.push_back(values[size_t(i)]);
      remap[size_t(i)] = static_cast<int32_t>(ids.size() - 1);
    }
    return IdMap::of_integers(std::move(ids));
  }
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return texts_[size_t(a)] < texts_[size_t(b)]; });
  std::vector<std::string> ids;
  ids.reserve(n);
  for (int32_t i : order) {
    remap[size_t(i)] = static_cast<int32_t>(ids.size());
    ids.push_back(texts_[size_t(i)]);
  }
  return IdMap::of_strings(std::move(ids));
}

}  // namespace shoal::data
