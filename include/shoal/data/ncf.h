// NCF data: implicit-feedback positives (user, item) with optional numeric context per
// positive, the leave-one-out test set (1 positive + sampled negatives per user), and the
// per-epoch training instances (each positive followed by k sampled negatives, shuffled).
//
// File formats (see docs/ncf.md):
//   *.train.rating / *.test.rating   user<TAB>item<TAB>rating<TAB>timestamp (≥ 2 fields; any
//                                    whitespace separates; extra fields ignored)
//   *.test.negative                  (user,item)<TAB>neg1<TAB>...<TAB>negK
//   CSV                              header, then user,item[,label][,context columns...]
// Ids: read_ncf_dataset maps any integers or strings to dense rows (data/ids.h) over all the
// files; the single-file readers take ids as given (0-based, non-negative: the table rows)
// unless NcfIdRules names the maps to build. Readers name the file and line of any bad row.
// Legend: P positives, C context columns, U users, V items, K test negatives per user.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shoal/core/huge_pages.h"
#include "shoal/core/tensor.h"
#include "shoal/data/ids.h"

namespace shoal::data {

// How a reader takes ids. Without maps, ids are table rows, with optional upper bounds (-1:
// inferred as max id + 1; a row with an id at or above a bound is rejected with its line).
// With maps, an id is any text and the row a provisional one of the builder (read_ncf_dataset
// fixes them once every file is read); the bounds do not apply.
struct NcfIdRules {
  Index num_users = -1;
  Index num_items = -1;
  IdMapBuilder* users = nullptr;
  IdMapBuilder* items = nullptr;
};

struct NcfPositives {
  std::vector<int32_t> users;  // [P]
  std::vector<int32_t> items;  // [P]
  // [P, C] row-major; empty when C = 0. Training reads its rows at random: huge pages.
  HugePageVector<float> context;
  std::vector<std::string> context_names;  // [C]
  Index num_users = 0;          // U = max user id + 1 (or larger, when set from other files)
  Index num_items = 0;          // V
  Index dropped_negatives = 0;  // CSV rows with label 0 (not used: negatives are sampled)
  std::string source;

  Index size() const { return static_cast<Index>(users.size()); }
  Index context_cols() const { return static_cast<Index>(context_names.size()); }
};

struct NcfTestSet {
  std::vector<int32_t> users;      // [T] one line per test user
  std::vector<int32_t> items;      // [T] the held-out positive
  std::vector<int32_t> negatives;  // [T, K] row-major
  Index negatives_per_user = 0;    // K
  Index num_users = 0;             // max user id + 1 seen here
  Index num_items = 0;             // max item id + 1 seen here (positives and negatives)

  Index size() const { return static_cast<Index>(users.size()); }
};

// `user item [rating [timestamp ...]]` lines (the NCF authors' *.rating format).
NcfPositives read_ncf_ratings(const std::string& path, NcfIdRules limits = {});
NcfPositives parse_ncf_ratings(const std::string& text, const std::string& source,
                               NcfIdRules limits = {});

// A *.test.rating file plus its aligned *.test.negative file (same users, same order; every
// negatives line has the same count and its header "(u,i)" must match the rating line).
NcfTestSet read_ncf_test(const std::string& rating_path, const std::string& negative_path,
                         NcfIdRules limits = {});
NcfTestSet parse_ncf_test(const std::string& rating_text, const std::string& rating_source,
                          const std::string& negative_text, const std::string& negative_source,
                          NcfIdRules limits = {});

// CSV with a header. Columns "user" and "item" are required; "label" is optional (rows with
// label 0 are dropped and counted, any other value is a positive). Context columns: the
// named ones, or when `context_cols` is empty every other column, in file order.
NcfPositives read_ncf_csv(const std::string& path, const std::vector<std::string>& context_cols,
                          NcfIdRules limits = {});
NcfPositives parse_ncf_csv(const std::string& text, const std::string& source,
                           const std::vector<std::string>& context_cols, NcfIdRules limits = {});

// The files of a recommender data set, read with one user map and one item map over all of
// them: a training file (CSV when it ends in .csv, else user item ... lines), optionally the
// leave-one-out test files. `users` / `items`: further ids the model should know (0..n-1),
// -1 for none. Tables are sized to the distinct ids.
struct NcfFiles {
  std::string train, test, test_negatives;
  std::vector<std::string> context_cols;  // CSV only; empty: every other column
  Index users = -1, items = -1;
};

struct NcfDataset {
  NcfPositives train;
  NcfTestSet test;  // empty without test files
  IdMap users, items;
};

NcfDataset read_ncf_dataset(const NcfFiles& files);

// Throws naming the user, by its own id in `users`, that has every item as a positive: no
// negative could be drawn for it (the sampler, which sees only rows, would name the row).
void check_negatives_exist(const NcfPositives& p, const IdMap& users);

// Synthetic positives with planted structure (`shoal synth ncf`, `shoal bench ncf`): users and
// items belong to one of G = 8 groups; 80% of a user's positives are items of its group.
// Context column 0 carries the group signal (noisy), the others are N(0, 1) noise.
// Requires users > 0, items >= 16, positives > 0, context >= 0.
NcfPositives synth_ncf_positives(Index positives, Index users, Index items, Index context,
                                 uint64_t seed);

}  // namespace shoal::data
