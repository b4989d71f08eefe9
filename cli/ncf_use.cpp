// `shoal ncf recommend` (top-K items for users, from a saved model) and `shoal ncf split`
// (train/test splits of an interactions file): using a recommender once it is trained.

#include <algorithm>
#include <cmath>
#include <deque>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "shoal/core/file_io.h"
#include "shoal/data/interaction_split.h"
#include "shoal/data/text.h"
#include "shoal/train/checkpoint.h"
#include "shoal/train/ncf_saved_model.h"

namespace shoal::cli {
namespace {

// A text table: a CSV with a header, or (other files) whitespace-separated columns without one.
struct Table {
  std::string text;  // the file; rows and header are views into it
  bool csv = false;
  std::vector<std::string> header;  // CSV only
  std::vector<std::vector<std::string_view>> rows;
  std::vector<std::string_view> lines;  // each row's line as written
  std::deque<std::string> decoded;      // CSV values with a doubled quote inside
  std::string source;

  Index column(const std::string& name, bool required) const {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return static_cast<Index>(i);
    if (required)
      throw Error(fmt::format("no column '{}'", name),
                  ErrorContext{.file = source, .field = name, .expected = "a header naming it"});
    return -1;
  }
};

Table read_table(const std::string& path) {
  Table t;
  t.source = path;
  t.text = read_input_file(path);
  t.csv = path.size() >= 4 && path.compare(path.size() - 4, 4, ".csv") == 0;
  std::string_view rest = data::checked_text(t.text, path);
  std::vector<std::string_view> fields;
  int64_t line_no = 0;
  while (!rest.empty()) {
    const size_t nl = t.csv ? data::csv_record_end(rest) : rest.find('\n');
    std::string_view line = data::trim(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    line_no += 1 + std::count(line.begin(), line.end(), '\n');
    if (line.empty()) continue;
    if (t.csv) {
      data::split_csv(line, fields, t.decoded);
    } else {
      fields.clear();
      for (size_t i = 0; i < line.size();) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
        const size_t s = i;
        while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
        if (i > s) fields.push_back(line.substr(s, i - s));
      }
    }
    if (t.csv && t.header.empty()) {
      t.header.assign(fields.begin(), fields.end());
      continue;
    }
    const size_t width = t.csv ? t.header.size() : (t.rows.empty() ? 0 : t.rows[0].size());
    if (width != 0 && fields.size() != width)
      throw Error("wrong number of fields", ErrorContext{.file = path,
                                                         .line = line_no,
                                                         .expected = std::to_string(width),
                                                         .actual = std::to_string(fields.size())});
    t.rows.push_back(fields);
    t.lines.push_back(line);
  }
  if (t.rows.empty())
    throw Error("no rows", ErrorContext{.file = path, .expected = "at least one row"});
  return t;
}

struct RecommendArgs {
  std::string model, users, items, out;
  Index k = 10;
  bool include_seen = false;
  std::string on_unknown = "raise";
  int threads = 0;
};

// Rows of the ids in `col` of `t` through `map`; unknown ids raise or (skip) are dropped and
// reported. `keep[r]` says which request rows stay.
std::vector<int32_t> map_ids(const Table& t, Index col, const data::IdMap& map, const char* what,
                             bool skip, std::vector<uint8_t>& keep) {
  std::vector<int32_t> rows;
  std::vector<std::string> unknown;
  keep.assign(t.rows.size(), 1);
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const std::string_view id = t.rows[r][static_cast<size_t>(col)];
    const int32_t row = map.find(id);
    if (row >= 0) {
      rows.push_back(row);
      continue;
    }
    keep[r] = 0;
    if (!skip)
      throw Error(fmt::format("{} id the model does not know", what),
                  ErrorContext{.file = t.source,
                               .line = static_cast<int64_t>(r + 1 + (t.csv ? 1 : 0)),
                               .field = what,
                               .expected = "an id the model was fitted on (--on-unknown skip "
                                           "leaves such rows out)",
                               .actual = std::string(id)});
    unknown.emplace_back(id);
  }
  if (!unknown.empty())
    fmt::print(
        stderr, "shoal ncf recommend: skipped {} unknown {} id(s): {}{}\n", unknown.size(), what,
        fmt::join(unknown.begin(), unknown.begin() + std::min<size_t>(5, unknown.size()), ", "),
        unknown.size() > 5 ? ", ..." : "");
  return rows;
}

void run_recommend(const RecommendArgs& a) {
  SHOAL_CHECK(a.k >= 1, "--k: expected an integer ≥ 1, got {}", a.k);
  SHOAL_CHECK(a.on_unknown == "raise" || a.on_unknown == "skip",
              "--on-unknown: expected raise or skip, got {}", a.on_unknown);
  OutputPlan({a.model, a.users, a.items}).file(a.out, "--out");
  const train::NcfSavedModel m = train::load_ncf_model(a.model);
  const bool skip = a.on_unknown == "skip";
  const Table users = read_table(a.users);
  const Index ucol = users.csv ? users.column("user", true) : 0;
  std::vector<uint8_t> keep;
  const std::vector<int32_t> urows = map_ids(users, ucol, m.users, "user", skip, keep);
  if (urows.empty())
    throw Error(
        "no user of --users is known to the model (every one was skipped): nothing "
        "written",
        ErrorContext{.file = a.users, .field = "user", .expected = "a user the model knows"});
  // Context per request row: the file's context columns when it has them all, else each
  // user's mean training context (kept with the model).
  const auto c = static_cast<Index>(m.context_cols.size());
  std::vector<Index> ccols;
  for (const auto& name : m.context_cols)
    if (users.csv && users.column(name, false) >= 0) ccols.push_back(users.column(name, false));
  SHOAL_CHECK(ccols.empty() || static_cast<Index>(ccols.size()) == c,
              "{}: give every context column of the model ({}) or none", a.users,
              fmt::join(m.context_cols, ", "));
  std::vector<float> ctx(urows.size() * static_cast<size_t>(c));
  for (size_t r = 0, q = 0; r < users.rows.size(); ++r) {
    if (!keep[r]) continue;
    for (Index j = 0; j < c; ++j) {
      float v = m.user_context[static_cast<size_t>(urows[q] * c + j)];
      if (!ccols.empty()) {
        const std::string f(users.rows[r][static_cast<size_t>(ccols[size_t(j)])]);
        char* end = nullptr;
        v = std::strtof(f.c_str(), &end);
        SHOAL_CHECK(end == f.c_str() + f.size() && std::isfinite(v),
                    "{}: context value '{}' of row {} is not a finite number", a.users, f, r + 1);
      }
      ctx[q * static_cast<size_t>(c) + static_cast<size_t>(j)] = v;
    }
    ++q;
  }
  std::vector<int32_t> cands;
  if (!a.items.empty()) {
    const Table items = read_table(a.items);
    std::vector<uint8_t> ikeep;
    cands =
        map_ids(items, items.csv ? items.column("item", true) : 0, m.items, "item", skip, ikeep);
    std::sort(cands.begin(), cands.end());
    cands.erase(std::unique(cands.begin(), cands.end()), cands.end());
    SHOAL_CHECK(!cands.empty(), "{}: no known candidate items", a.items);
  }
  std::vector<int64_t> soff(1, 0);
  std::vector<int32_t> seen;
  for (int32_t u : urows) {
    if (!a.include_seen)
      seen.insert(seen.end(), m.seen_items.begin() + m.seen_offsets[size_t(u)],
                  m.seen_items.begin() + m.seen_offsets[size_t(u) + 1]);
    soff.push_back(static_cast<int64_t>(seen.size()));
  }
  const Index k =
      std::min<Index>(a.k, cands.empty() ? m.num_items() : static_cast<Index>(cands.size()));
  train::NcfEvaluator ev(m.model_config(), cap_threads(a.threads, "ncf"));
  train::load_checkpoint_bytes(ev.arena(), m.weights, a.model + "/weights.safetensors");
  const train::NcfTopK r = ev.top_k({.users = urows,
                                     .candidates = cands,
                                     .seen_offsets = soff,
                                     .seen_items = seen,
                                     .context = c > 0 ? ctx.data() : nullptr,
                                     .k = k});
  const Index n_rows = std::accumulate(r.counts.begin(), r.counts.end(), Index{0});
  SHOAL_CHECK(n_rows > 0,
              "no item left to recommend: every candidate is among the users' training items "
              "(--include-seen recommends them); nothing written");
  std::string out = "user,item,score,rank\n";
  for (size_t q = 0; q < urows.size(); ++q)
    for (Index j = 0; j < r.counts[q]; ++j) {
      const size_t at = q * static_cast<size_t>(k) + static_cast<size_t>(j);
      const double score = 1.0 / (1.0 + std::exp(-static_cast<double>(r.logits[at])));
      data::append_csv_field(out, m.users.text(urows[q]));
      out.push_back(',');
      data::append_csv_field(out, m.items.text(r.items[at]));
      out += fmt::format(",{:.6g},{}\n", score, j + 1);
    }
  write_file_atomic(a.out, out);
  fmt::print(stderr, "shoal ncf recommend: {} users × top {} of {} items → {}\n", urows.size(), k,
             cands.empty() ? m.num_items() : static_cast<Index>(cands.size()), a.out);
}

struct SplitArgs {
  std::string data, how = "leave-last-out", train_out, test_out, ties = "item";
  double ratio = 0.8;
  uint64_t seed = 0;
};

// Rows are written as they are in the input (every column kept), the CSV header on both.
void run_split(const SplitArgs& a) {
  SHOAL_CHECK(a.ties == "item" || a.ties == "random", "--ties: expected item or random, got {}",
              a.ties);
  OutputPlan({a.data}).file(a.train_out, "--train-out").file(a.test_out, "--test-out");
  const data::SplitSpec spec{.kind = data::split_kind(a.how),
                             .ratio = a.ratio,
                             .seed = a.seed,
                             .random_ties = a.ties == "random"};
  const Table t = read_table(a.data);
  // CSV: columns user, item, timestamp; other files: user item [rating] timestamp (MovieLens).
  const Index cu = t.csv ? t.column("user", true) : 0, ci = t.csv ? t.column("item", true) : 1;
  const bool timed = spec.kind != data::SplitKind::kRandom;
  const Index ct = !timed  ? -1
                   : t.csv ? t.column("timestamp", true)
                           : static_cast<Index>(t.rows[0].size()) - 1;
  SHOAL_CHECK(t.csv || t.rows[0].size() >= (timed ? 3u : 2u),
              "{}: need user item [rating] timestamp columns", a.data);
  data::IdMapBuilder ub, ib;
  std::vector<int32_t> users, items;
  std::vector<double> times;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const auto line = static_cast<int64_t>(r + 1 + (t.csv ? 1 : 0));
    // An empty id would be one more user (or item) named ""; an empty time would read as 0,
    // the earliest of all.
    for (const auto& [c, name] : {std::pair{cu, "user"}, std::pair{ci, "item"}})
      if (t.rows[r][size_t(c)].empty())
        throw Error("empty id", ErrorContext{.file = a.data,
                                             .line = line,
                                             .field = name,
                                             .expected = "an id",
                                             .actual = "(empty)"});
    users.push_back(ub.add(t.rows[r][size_t(cu)]));
    items.push_back(ib.add(t.rows[r][size_t(ci)]));
    if (!timed) continue;
    const std::string f(t.rows[r][size_t(ct)]);
    char* end = nullptr;
    const double v = std::strtod(f.c_str(), &end);
    if (f.empty() || end != f.c_str() + f.size() || !std::isfinite(v))
      throw Error("timestamp is not a number",
                  ErrorContext{.file = a.data,
                               .line = line,
                               .field = "timestamp",
                               .expected = "a number (dates as text are not compared)",
                               .actual = f.empty() ? "(empty)" : f});
    times.push_back(v);
  }
  // Rows in id order, so ties by item follow the ids (data/ids.h).
  std::vector<int32_t> remap;
  ub.finish(remap);
  for (auto& u : users) u = remap[size_t(u)];
  ib.finish(remap);
  for (auto& i : items) i = remap[size_t(i)];
  const std::vector<uint8_t> test = data::split_interactions(users, items, times, spec);
  std::string tr, te;
  if (t.csv) {
    // The rows go out as they came in (quoted as written); the header, read, is quoted again.
    data::append_csv_row(tr, std::vector<std::string_view>(t.header.begin(), t.header.end()));
    te = tr;
  }
  Index n_test = 0;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    (test[r] ? te : tr).append(t.lines[r]).push_back('\n');
    n_test += test[r];
  }
  const auto n_rows = static_cast<Index>(t.rows.size());
  if (n_test == 0 || n_test == n_rows)
    throw Error(
        fmt::format("the split leaves {} empty: nothing written",
                    n_test == 0 ? "--test-out" : "--train-out"),
        ErrorContext{.file = a.data,
                     .field = "--how",
                     .expected = "rows for both train and test",
                     .actual = fmt::format("{} interactions, {} for test", n_rows, n_test)});
  write_file_atomic(a.train_out, tr);
  write_file_atomic(a.test_out, te);
  fmt::print(stderr, "shoal ncf split ({}): {} interactions → {} train, {} test\n", a.how,
             t.rows.size(), static_cast<Index>(t.rows.size()) - n_test, n_test);
}

}  // namespace

void register_ncf_use(CLI::App& ncf) {
  static RecommendArgs r;
  auto* rec = ncf.add_subcommand("recommend", "Top-K items for users from a saved model");
  rec->add_option("--model", r.model, "Model directory (shoal ncf train --save, NCF.save)")
      ->required();
  rec->add_option("--users", r.users,
                  "Users to recommend for: a CSV with a 'user' column (and the model's context "
                  "columns, to give each request its own context), or one id per line")
      ->required();
  rec->add_option("--k", r.k, "Items per user")->capture_default_str();
  rec->add_option("--items", r.items,
                  "Candidate items (CSV with an 'item' column, or one per line); default: the "
                  "whole catalog");
  rec->add_flag("--include-seen", r.include_seen,
                "Also recommend the user's training items (left out by default)");
  rec->add_option("--on-unknown", r.on_unknown,
                  "Ids the model does not know: raise (an error) or skip (reported on stderr)")
      ->capture_default_str();
  rec->add_option("--threads", r.threads, "Threads (0 = all cores)")->capture_default_str();
  rec->add_option("--out", r.out, "CSV user,item,score,rank (best first per user)")->required();
  rec->callback([] { run_recommend(r); });

  static SplitArgs s;
  auto* sp = ncf.add_subcommand("split", "Split interactions into train and test, per user");
  sp->add_option("--data", s.data,
                 "Interactions: CSV with user, item, timestamp columns, or MovieLens-style "
                 "user item rating timestamp lines")
      ->required();
  sp->add_option("--how", s.how,
                 "leave-last-out (each user's latest), random (one per user) or chrono "
                 "(each user's earliest --ratio in train)")
      ->capture_default_str();
  sp->add_option("--ratio", s.ratio, "chrono: share kept for training")->capture_default_str();
  sp->add_option("--ties", s.ties,
                 "leave-last-out ties in time: item (the largest item id) or random")
      ->capture_default_str();
  sp->add_option("--seed", s.seed)->check(kUint64)->capture_default_str();
  sp->add_option("--train-out", s.train_out)->required();
  sp->add_option("--test-out", s.test_out)->required();
  sp->callback([] { run_split(s); });
}

}  // namespace shoal::cli
