// The one key–value form (core/options.h): values as JSON or as text (CSV cells, CLI flags),
// exact integers, errors naming the key, and unknown keys named with the known ones.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shoal/core/error.h"
#include "shoal/core/options.h"

namespace shoal::options_test {

struct Settings {
  int64_t steps = 1000;
  uint64_t seed = 1;
  double rate = 1e-3;
  bool norm = true;
  std::string name = "x";
  std::vector<std::string> cols;
  std::vector<int64_t> widths = {64, 32};
  std::string kind = "mae";
  void visit(OptionVisitor& v) {
    static constexpr std::string_view kKinds[] = {"mae", "mse"};
    v("steps", steps, "steps");
    v("seed", seed, "seed");
    v("rate", rate, "rate");
    v("norm", norm, "norm");
    v("name", name, "name");
    v("cols", cols, "cols");
    v("widths", widths, "widths");
    v.choice("kind", kind, kKinds, "kind");
  }
};

Settings read(const nlohmann::json& j) {
  Settings s;
  OptionReader r(j, "test");
  s.visit(r);
  r.check_all_used();
  return s;
}

std::string error_of(const nlohmann::json& j) {
  try {
    read(j);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Options, DefaultsStayWhenNotGiven) {
  const Settings s = read(nlohmann::json::object());
  EXPECT_EQ(s.steps, 1000);
  EXPECT_EQ(s.widths, (std::vector<int64_t>{64, 32}));
}

TEST(Options, JsonAndTextValuesReadAlike) {
  const Settings a = read({{"steps", 5},
                           {"rate", 0.5},
                           {"norm", false},
                           {"cols", {"a", "b"}},
                           {"widths", {8, 4}},
                           {"kind", "mse"},
                           {"seed", 7}});
  const Settings b = read({{"steps", "5"},
                           {"rate", "0.5"},
                           {"norm", "false"},
                           {"cols", "a, b"},
                           {"widths", "8,4"},
                           {"kind", "mse"},
                           {"seed", "7"}});
  for (const Settings* s : {&a, &b}) {
    EXPECT_EQ(s->steps, 5);
    EXPECT_EQ(s->rate, 0.5);
    EXPECT_FALSE(s->norm);
    EXPECT_EQ(s->cols, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(s->widths, (std::vector<int64_t>{8, 4}));
    EXPECT_EQ(s->kind, "mse");
    EXPECT_EQ(s->seed, 7u);
  }
}

TEST(Options, IntegersAreExactAndNeverWrap) {
  EXPECT_EQ(read({{"seed", "18446744073709551615"}}).seed, 18446744073709551615ULL);
  EXPECT_EQ(read({{"steps", "-9223372036854775808"}}).steps, INT64_MIN);
  EXPECT_NE(error_of({{"seed", "18446744073709551616"}}).find("must be an integer in [0, 2^64)"),
            std::string::npos);
  EXPECT_NE(error_of({{"seed", -1}}).find("'seed'"), std::string::npos);
  EXPECT_NE(error_of({{"steps", "9223372036854775808"}}).find("out of range"), std::string::npos);
  EXPECT_NE(error_of({{"steps", 2.5}}).find("must be an integer"), std::string::npos);
  EXPECT_NE(error_of({{"rate", "1e999"}}).find("out of range"), std::string::npos);
  EXPECT_NE(error_of({{"rate", "fast"}}).find("must be a number"), std::string::npos);
}

TEST(Options, UnknownKeysAndChoicesAreNamed) {
  EXPECT_NE(error_of({{"colour", 1}})
                .find("unknown config key 'colour' for test (expected one of: cols, kind, name, "
                      "norm, rate, seed, steps, widths)"),
            std::string::npos)
      << error_of({{"colour", 1}});
  EXPECT_NE(error_of({{"kind", "l1"}}).find("unknown kind 'l1' (expected mae or mse, got l1)"),
            std::string::npos)
      << error_of({{"kind", "l1"}});
  EXPECT_NE(error_of({{"norm", "maybe"}}).find("must be true or false"), std::string::npos);
}

TEST(Options, WriterAndListerSeeEveryOptionOnce) {
  Settings s = read({{"steps", 3}});
  OptionWriter w;
  s.visit(w);
  EXPECT_EQ(w.json.size(), 8u);
  EXPECT_EQ(w.json["steps"], 3);
  EXPECT_EQ(read(w.json).steps, 3);  // what the writer writes, the reader reads back
  OptionLister l;
  Settings d;
  d.visit(l);
  ASSERT_EQ(l.options.size(), 8u);
  EXPECT_EQ(l.options[0].key, "steps");
  EXPECT_EQ(l.options[0].default_text, "1000");
  EXPECT_EQ(l.options[6].default_text, "64,32");
  EXPECT_EQ(l.options[7].choices, (std::vector<std::string>{"mae", "mse"}));
}

}  // namespace shoal::options_test
