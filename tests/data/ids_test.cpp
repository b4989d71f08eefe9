#include "shoal/data/ids.h"

#include <gtest/gtest.h>

#include "shoal/data/ncf.h"

namespace shoal::data {
namespace {

// Integer ids sort numerically (and "07" is 7), strings bytewise; the remap takes each
// provisional (first-seen) row to its final one.
TEST(IdMap, IntegersSortNumericallyStringsBytewise) {
  IdMapBuilder b;
  EXPECT_EQ(b.add("100"), 0);
  EXPECT_EQ(b.add("-5"), 1);
  EXPECT_EQ(b.add("07"), 2);
  EXPECT_EQ(b.add("100"), 0);
  EXPECT_EQ(b.add("7"), 3);
  std::vector<int32_t> remap;
  const IdMap m = b.finish(remap);
  ASSERT_TRUE(m.integers());
  EXPECT_EQ(m.integer_ids(), (std::vector<int64_t>{-5, 7, 100}));
  EXPECT_EQ(remap, (std::vector<int32_t>{2, 0, 1, 1}));
  EXPECT_EQ(m.find("+7"), 1);
  EXPECT_EQ(m.find("8"), -1);
  EXPECT_EQ(m.find("x"), -1);
  EXPECT_EQ(m.text(0), "-5");

  IdMapBuilder s;
  for (const char* id : {"b", "10", "a", "é", "B"}) s.add(id);
  const IdMap ms = s.finish(remap);
  ASSERT_FALSE(ms.integers());
  EXPECT_EQ(ms.string_ids(), (std::vector<std::string>{"10", "B", "a", "b", "é"}));
  EXPECT_EQ(remap, (std::vector<int32_t>{3, 0, 2, 4, 1}));
  EXPECT_EQ(ms.find("10"), 0);
  EXPECT_EQ(ms.find("010"), -1);
}

// A data set with string users and sparse integer items: tables sized to the distinct ids,
// every file mapped with the same maps.
TEST(NcfDataset, AnyIdsOverEveryFile) {
  const std::string dir = ::testing::TempDir();
  auto write = [&](const std::string& name, const std::string& text) {
    FILE* f = std::fopen((dir + name).c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
    return dir + name;
  };
  const std::string train =
      write("ids_train.csv", "user,item,ctx\nann,5000,0.5\nbob,7,1\nann,7,2\ncat,123456789,3\n");
  const std::string test = write("ids.test.rating", "bob\t5000\nann\t99\n");
  const std::string neg = write("ids.test.negative", "(bob,5000)\t7\t42\n(ann,99)\t5000\t7\n");
  const NcfDataset d = read_ncf_dataset({.train = train, .test = test, .test_negatives = neg});
  EXPECT_EQ(d.users.string_ids(), (std::vector<std::string>{"ann", "bob", "cat"}));
  EXPECT_EQ(d.items.integer_ids(), (std::vector<int64_t>{7, 42, 99, 5000, 123456789}));
  EXPECT_EQ(d.train.num_users, 3);
  EXPECT_EQ(d.train.num_items, 5);
  EXPECT_EQ(d.train.users, (std::vector<int32_t>{0, 1, 0, 2}));
  EXPECT_EQ(d.train.items, (std::vector<int32_t>{3, 0, 0, 4}));
  EXPECT_EQ(d.train.context_cols(), 1);
  EXPECT_EQ(d.test.users, (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(d.test.items, (std::vector<int32_t>{3, 2}));
  EXPECT_EQ(d.test.negatives, (std::vector<int32_t>{0, 1, 3, 0}));
  // Known ids beyond the files: 0..n-1.
  const NcfDataset e = read_ncf_dataset({.train = write("ids2.rating", "3\t1\n"), .items = 4});
  EXPECT_EQ(e.items.integer_ids(), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(e.users.integer_ids(), (std::vector<int64_t>{3}));
}

}  // namespace
}  // namespace shoal::data
