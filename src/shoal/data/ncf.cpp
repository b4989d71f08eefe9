#include "shoal/data/ncf.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>

#include "shoal/core/rng.h"
#include "shoal/data/gzip.h"
#include "shoal/data/text.h"

namespace shoal::data {
namespace {

// Line-by-line view of a text buffer that tracks 1-based line numbers and strips '\r'. With
// `csv`, a record is a CSV one (a quoted field may hold line breaks); its number is its first
// line's.
class Lines {
 public:
  explicit Lines(std::string_view text, bool csv = false) : rest_(text), csv_(csv) {}
  bool next(std::string_view& line) {
    if (rest_.empty()) return false;
    const size_t nl = csv_ ? csv_record_end(rest_) : rest_.find('\n');
    line = rest_.substr(0, nl);
    rest_ = nl == std::string_view::npos ? std::string_view{} : rest_.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line_no_ += next_line_;
    next_line_ = 1 + std::count(line.begin(), line.end(), '\n');
    return true;
  }
  int64_t line_no() const { return line_no_; }

 private:
  std::string_view rest_;
  bool csv_ = false;
  int64_t line_no_ = 0, next_line_ = 1;
};

bool is_blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t'; });
}

// Splits on runs of spaces/tabs (rating files) into at most `max` fields; returns the count
// (which may exceed `max`: the extra fields are counted, not stored).
size_t split_ws(std::string_view line, std::string_view* out, size_t max) {
  size_t n = 0, i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size()) break;
    const size_t s = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (n < max) out[n] = line.substr(s, i - s);
    ++n;
  }
  return n;
}

[[noreturn]] void fail(const std::string& source, int64_t line, const std::string& msg,
                       std::string field = {}, std::string expected = {}, std::string actual = {}) {
  throw Error(msg, ErrorContext{.file = source,
                                .line = line,
                                .field = std::move(field),
                                .expected = std::move(expected),
                                .actual = std::move(actual)});
}

int32_t parse_id(std::string_view f, const std::string& source, int64_t line, const char* what) {
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  if (ec != std::errc() || ptr != f.data() + f.size())
    fail(source, line, fmt::format("{} id is not an integer", what), what, "an integer id >= 0",
         std::string(f));
  if (v < 0)
    fail(source, line, fmt::format("negative {} id", what), what, "an id >= 0", std::string(f));
  if (v > std::numeric_limits<int32_t>::max())
    fail(source, line, fmt::format("{} id does not fit int32", what), what, "an id < 2^31",
         std::string(f));
  return static_cast<int32_t>(v);
}

// A CSV id column may be written as a float ("12.0"); it must still be an integer.
int32_t parse_id_number(std::string_view f, const std::string& source, int64_t line,
                        const char* what) {
  int64_t iv = 0;
  const auto r = std::from_chars(f.data(), f.data() + f.size(), iv);
  if (r.ec == std::errc() && r.ptr == f.data() + f.size()) return parse_id(f, source, line, what);
  double d = 0;
  const auto rd = std::from_chars(f.data(), f.data() + f.size(), d);
  if (rd.ec != std::errc() || rd.ptr != f.data() + f.size() || d != std::floor(d))
    fail(source, line, fmt::format("{} id is not an integer", what), what, "an integer id >= 0",
         std::string(f));
  if (d < 0)
    fail(source, line, fmt::format("negative {} id", what), what, "an id >= 0", std::string(f));
  if (d > std::numeric_limits<int32_t>::max())
    fail(source, line, fmt::format("{} id does not fit int32", what), what, "an id < 2^31",
         std::string(f));
  return static_cast<int32_t>(d);
}

int32_t check_limit(int32_t id, Index limit, const std::string& source, int64_t line,
                    const char* what) {
  if (limit >= 0 && id >= limit)
    fail(source, line, fmt::format("{} id out of range", what), what,
         fmt::format("an id < {}", limit), std::to_string(id));
  return id;
}

// Ids index embedding rows (max id + 1 rows each): one far outlier in a file of few ids would
// size the tables for it (2^31 ids: a 100+ GB allocation). Such an id is named here, with its
// line, before anything is allocated. The bound is generous: 2^20 ids, or 64 per row.
struct MaxId {
  int32_t id = -1;
  int64_t line = 0;
  void see(int32_t v, int64_t ln) {
    if (v > id) id = v, line = ln;
  }
  void check(size_t rows, Index limit, const std::string& source, const char* what) const {
    const int64_t bound = std::max<int64_t>(int64_t{1} << 20, 64 * static_cast<int64_t>(rows));
    if (limit >= 0 || id < bound) return;
    fail(source, line, fmt::format("{} id far beyond the others", what), what,
         fmt::format("dense ids 0..n-1 (one embedding row each; at most {} for {} rows)", bound,
                     rows),
         std::to_string(id));
  }
};

}  // namespace

NcfPositives parse_ncf_ratings(const std::string& text, const std::string& source,
                               NcfIdRules limits) {
  NcfPositives p;
  p.source = source;
  Lines lines(checked_text(text, source));
  std::string_view line, f[2];
  size_t width = 0;  // fields of the first line: every line has as many
  int64_t width_line = 0;
  MaxId max_user, max_item;
  while (lines.next(line)) {
    if (is_blank(line)) continue;
    const size_t n = split_ws(line, f, 2);
    if (n < 2)
      fail(source, lines.line_no(), "wrong number of fields", "", "user<TAB>item[<TAB>...]",
           fmt::format("{} field(s)", n));
    const int64_t ln = lines.line_no();
    if (width == 0) {
      width = n;
      width_line = ln;
    } else if (n != width) {
      fail(source, ln, "wrong number of fields", "",
           fmt::format("{} fields (as on line {})", width, width_line), std::to_string(n));
    }
    if (limits.users != nullptr) {
      p.users.push_back(limits.users->add(f[0]));
      p.items.push_back(limits.items->add(f[1]));
      continue;
    }
    p.users.push_back(
        check_limit(parse_id(f[0], source, ln, "user"), limits.num_users, source, ln, "user"));
    p.items.push_back(
        check_limit(parse_id(f[1], source, ln, "item"), limits.num_items, source, ln, "item"));
    max_user.see(p.users.back(), ln);
    max_item.see(p.items.back(), ln);
    p.num_users = std::max<Index>(p.num_users, p.users.back() + Index{1});
    p.num_items = std::max<Index>(p.num_items, p.items.back() + Index{1});
  }
  if (p.users.empty())
    fail(source, -1, "no ratings found", "", "user<TAB>item lines", "an empty file");
  max_user.check(p.users.size(), limits.num_users, source, "user");
  max_item.check(p.users.size(), limits.num_items, source, "item");
  if (limits.num_users >= 0) p.num_users = limits.num_users;
  if (limits.num_items >= 0) p.num_items = limits.num_items;
  return p;
}

NcfPositives read_ncf_ratings(const std::string& path, NcfIdRules limits) {
  return parse_ncf_ratings(read_text_file(path), path, limits);
}

NcfTestSet parse_ncf_test(const std::string& rating_text, const std::string& rating_source,
                          const std::string& negative_text, const std::string& negative_source,
                          NcfIdRules limits) {
  NcfTestSet t;
  const NcfPositives pos = parse_ncf_ratings(rating_text, rating_source, limits);
  t.users = pos.users;
  t.items = pos.items;
  t.num_users = pos.num_users;
  t.num_items = pos.num_items;
  Lines lines(checked_text(negative_text, negative_source));
  MaxId max_negative;
  std::string_view line;
  std::vector<std::string_view> fields;
  size_t row = 0;
  while (lines.next(line)) {
    if (is_blank(line)) continue;
    const int64_t ln = lines.line_no();
    if (row >= t.users.size())
      fail(negative_source, ln, "more negative lines than test ratings", "",
           fmt::format("{} lines (as {})", t.users.size(), rating_source), "more");
    const size_t n = split_ws(line, nullptr, 0);
    fields.resize(n);
    split_ws(line, fields.data(), n);
    if (n < 2)
      fail(negative_source, ln, "wrong number of fields", "", "(user,item) and negative ids",
           fmt::format("{} field(s)", n));
    const auto k = static_cast<Index>(n - 1);
    if (row == 0) t.negatives_per_user = k;
    if (k != t.negatives_per_user)
      fail(negative_source, ln, "wrong number of negatives", "",
           fmt::format("{} (as on the first line)", t.negatives_per_user), std::to_string(k));
    // Header "(u,i)": must be the aligned rating line's user and item.
    std::string_view h = fields[0];
    const size_t comma = h.find(',');
    if (h.size() < 5 || h.front() != '(' || h.back() != ')' || comma == std::string_view::npos)
      fail(negative_source, ln, "malformed header", "", "(user,item)", std::string(h));
    const std::string_view hut = h.substr(1, comma - 1);
    const std::string_view hit = h.substr(comma + 1, h.size() - comma - 2);
    const int32_t hu =
        limits.users ? limits.users->add(hut) : parse_id(hut, negative_source, ln, "user");
    const int32_t hi =
        limits.items ? limits.items->add(hit) : parse_id(hit, negative_source, ln, "item");
    if (hu != t.users[row] || hi != t.items[row])
      fail(negative_source, ln, "header does not match the test rating on the same row", "",
           fmt::format("({},{}) from {}", t.users[row], t.items[row], rating_source),
           std::string(h));
    for (size_t j = 1; j < n && limits.items != nullptr; ++j)
      t.negatives.push_back(limits.items->add(fields[j]));
    for (size_t j = 1; j < n && limits.items == nullptr; ++j) {
      const int32_t it = check_limit(parse_id(fields[j], negative_source, ln, "item"),
                                     limits.num_items, negative_source, ln, "item");
      t.negatives.push_back(it);
      max_negative.see(it, ln);
      t.num_items = std::max<Index>(t.num_items, it + Index{1});
    }
    ++row;
  }
  max_negative.check(t.negatives.size(), limits.num_items, negative_source, "item");
  if (row != t.users.size())
    fail(negative_source, lines.line_no(), "fewer negative lines than test ratings", "",
         fmt::format("{} lines (as {})", t.users.size(), rating_source), std::to_string(row));
  return t;
}

NcfTestSet read_ncf_test(const std::string& rating_path, const std::string& negative_path,
                         NcfIdRules limits) {
  return parse_ncf_test(read_text_file(rating_path), rating_path, read_text_file(negative_path),
                        negative_path, limits);
}

NcfPositives parse_ncf_csv(const std::string& text, const std::string& source,
                           const std::vector<std::string>& context_cols, NcfIdRules limits) {
  NcfPositives p;
  p.source = source;
  Lines lines(checked_text(text, source), /*csv=*/true);
  std::string_view line;
  std::vector<std::string_view> fields;
  MaxId max_user, max_item;
  auto split_commas = [&](std::string_view l) { split_csv(l, fields); };
  if (!lines.next(line) || is_blank(line)) fail(source, 1, "missing header", "", "user,item,...");
  split_commas(line);
  const std::vector<std::string> header(fields.begin(), fields.end());
  auto find = [&](const std::string& name) -> Index {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return static_cast<Index>(i);
    return -1;
  };
  for (size_t i = 0; i < header.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (header[i] == header[j])
        fail(source, 1, "duplicated column name", header[i], "distinct column names");
  const Index cu = find("user"), ci = find("item"), cl = find("label");
  if (cu < 0 || ci < 0)
    fail(source, 1, "header must name the columns 'user' and 'item'", cu < 0 ? "user" : "item",
         "user,item[,label][,context...]", std::string(line));
  std::vector<Index> cc;
  if (context_cols.empty()) {
    for (size_t i = 0; i < header.size(); ++i) {
      const auto c = static_cast<Index>(i);
      if (c != cu && c != ci && c != cl) cc.push_back(c);
    }
  } else {
    for (const auto& name : context_cols) {
      const Index c = find(name);
      if (c < 0) fail(source, 1, "no such context column", name, "a column of the header");
      if (c == cu || c == ci || c == cl)
        fail(source, 1, "user, item and label cannot be context columns", name);
      cc.push_back(c);
    }
  }
  for (Index c : cc) p.context_names.push_back(header[static_cast<size_t>(c)]);
  while (lines.next(line)) {
    if (is_blank(line)) continue;
    const int64_t ln = lines.line_no();
    split_commas(line);
    if (fields.size() != header.size())
      fail(source, ln, "wrong number of columns", "", std::to_string(header.size()),
           std::to_string(fields.size()));
    if (cl >= 0) {
      double lab = 0;
      const std::string_view f = fields[static_cast<size_t>(cl)];
      const auto r = std::from_chars(f.data(), f.data() + f.size(), lab);
      if (r.ec != std::errc() || r.ptr != f.data() + f.size() || !std::isfinite(lab))
        fail(source, ln, "label is not a number", "label", "0 or 1", std::string(f));
      if (lab == 0) {
        ++p.dropped_negatives;
        continue;
      }
    }
    const std::string_view fu = fields[static_cast<size_t>(cu)];
    const std::string_view fi = fields[static_cast<size_t>(ci)];
    if (limits.users != nullptr) {
      if (fu.empty() || fi.empty())
        fail(source, ln, "empty id", fu.empty() ? "user" : "item", "an id");
      p.users.push_back(limits.users->add(fu));
      p.items.push_back(limits.items->add(fi));
    } else {
      const int32_t u = check_limit(parse_id_number(fu, source, ln, "user"), limits.num_users,
                                    source, ln, "user");
      const int32_t it = check_limit(parse_id_number(fi, source, ln, "item"), limits.num_items,
                                     source, ln, "item");
      p.users.push_back(u);
      p.items.push_back(it);
      max_user.see(u, ln);
      max_item.see(it, ln);
      p.num_users = std::max<Index>(p.num_users, u + Index{1});
      p.num_items = std::max<Index>(p.num_items, it + Index{1});
    }
    for (Index c : cc) {
      const std::string_view f = fields[static_cast<size_t>(c)];
      float v = 0;
      const auto r = std::from_chars(f.data(), f.data() + f.size(), v);
      if (r.ec != std::errc() || r.ptr != f.data() + f.size() || !std::isfinite(v))
        fail(source, ln, "context value is not a finite number", header[static_cast<size_t>(c)],
             "a number", std::string(f));
      p.context.push_back(v);
    }
  }
  if (p.users.empty())
    fail(source, -1, "no positive rows found", "", "rows after the header", "only the header");
  max_user.check(p.users.size(), limits.num_users, source, "user");
  max_item.check(p.users.size(), limits.num_items, source, "item");
  if (limits.num_users >= 0) p.num_users = limits.num_users;
  if (limits.num_items >= 0) p.num_items = limits.num_items;
  return p;
}

NcfPositives read_ncf_csv(const std::string& path, const std::vector<std::string>& context_cols,
                          NcfIdRules limits) {
  return parse_ncf_csv(read_text_file(path), path, context_cols, limits);
}

namespace {

bool is_csv_path(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".csv") == 0;
}

void remap_rows(const std::vector<int32_t>& remap, std::vector<int32_t>& rows) {
  for (int32_t& r : rows) r = remap[static_cast<size_t>(r)];
}

}  // namespace

NcfDataset read_ncf_dataset(const NcfFiles& files) {
  SHOAL_CHECK(is_csv_path(files.train) || files.context_cols.empty(),
              "context columns need a CSV training file");
  SHOAL_CHECK(files.test.empty() == files.test_negatives.empty(),
              "the test ratings and the test negatives go together");
  IdMapBuilder users, items;
  const NcfIdRules rules{.users = &users, .items = &items};
  NcfDataset d;
  d.train = is_csv_path(files.train) ? read_ncf_csv(files.train, files.context_cols, rules)
                                     : read_ncf_ratings(files.train, rules);
  if (!files.test.empty()) d.test = read_ncf_test(files.test, files.test_negatives, rules);
  for (Index u = 0; u < files.users; ++u) users.add(std::to_string(u));
  for (Index i = 0; i < files.items; ++i) items.add(std::to_string(i));
  std::vector<int32_t> remap;
  d.users = users.finish(remap);
  remap_rows(remap, d.train.users);
  remap_rows(remap, d.test.users);
  d.items = items.finish(remap);
  remap_rows(remap, d.train.items);
  remap_rows(remap, d.test.items);
  remap_rows(remap, d.test.negatives);
  d.train.num_users = d.test.num_users = d.users.size();
  d.train.num_items = d.test.num_items = d.items.size();
  return d;
}

void check_negatives_exist(const NcfPositives& p, const IdMap& users) {
  std::vector<int64_t> pairs(p.users.size());
  for (size_t i = 0; i < pairs.size(); ++i)
    pairs[i] = int64_t(p.users[i]) * p.num_items + p.items[i];
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  // Sorted pairs group each user's distinct items.
  for (size_t i = 0; i < pairs.size();) {
    const int64_t u = pairs[i] / p.num_items;
    size_t j = i;
    while (j < pairs.size() && pairs[j] / p.num_items == u) ++j;
    if (Index(j - i) >= p.num_items)
      throw Error(fmt::format("user {} has every one of the {} items as a positive; no negative "
                              "can be sampled",
                              users.text(u), p.num_items),
                  ErrorContext{.file = p.source,
                               .field = "user",
                               .expected = "a user with some item left to sample as a negative",
                               .actual = users.text(u)});
    i = j;
  }
}

NcfPositives synth_ncf_positives(Index positives, Index users, Index items, Index context,
                                 uint64_t seed) {
  SHOAL_CHECK(users > 0 && items >= 16 && positives > 0 && context >= 0,
              "synth ncf: need users > 0, items >= 16, positives > 0, context >= 0");
  const Index groups = 8;
  RngStream rng(seed, 11);
  NcfPositives p;
  p.users.resize(static_cast<size_t>(positives));
  p.items.resize(static_cast<size_t>(positives));
  p.context.resize(static_cast<size_t>(positives * context));
  for (Index c = 0; c < context; ++c) p.context_names.push_back("ctx" + std::to_string(c));
  for (Index r = 0; r < positives; ++r) {
    const auto u = static_cast<Index>(rng.below(static_cast<uint32_t>(users)));
    const Index g = u % groups;
    Index item = 0;
    if (rng.uniform() < 0.8f) {
      item = g + groups * static_cast<Index>(rng.below(static_cast<uint32_t>(items / groups)));
    } else {
      item = static_cast<Index>(rng.below(static_cast<uint32_t>(items)));
    }
    p.users[static_cast<size_t>(r)] = static_cast<int32_t>(u);
    p.items[static_cast<size_t>(r)] = static_cast<int32_t>(item);
    for (Index c = 0; c < context; ++c) {
      const double v = c == 0 ? static_cast<double>(g) / groups + 0.1 * rng.normal() : rng.normal();
      p.context[static_cast<size_t>(r * context + c)] = static_cast<float>(v);
    }
  }
  p.num_users = users;
  p.num_items = items;
  p.source = "synth";
  return p;
}

}  // namespace shoal::data
