// Options: the one key–value form every front end speaks.
//
// A model's (or a job's) options are a plain struct whose members hold the defaults, plus one
// `visit(OptionVisitor&)` that names each member once, with its help text:
//
//   struct Config {
//     Index n_block = 2;
//     void visit(OptionVisitor& v) { v("n_block", n_block, "mixing blocks"); }
//   };
//
// That list is the only one: the CLI turns each entry into a flag (`--n-block`), a jobs file's
// `config` object and Python's keyword arguments are read into the struct through it
// (OptionReader), and a run's settings are written back out through it (for journal keys and
// metrics). So an option added to a struct appears in all three front ends, with one name and
// one default. Values arrive as JSON: numbers, booleans, strings, lists; a number or a boolean
// may also come as text (a CSV cell, a command-line flag), a list as comma-separated text.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace shoal {

class OptionVisitor {
 public:
  virtual ~OptionVisitor() = default;
  virtual void operator()(std::string_view key, int64_t& v, std::string_view help) = 0;
  virtual void operator()(std::string_view key, uint64_t& v, std::string_view help) = 0;
  virtual void operator()(std::string_view key, double& v, std::string_view help) = 0;
  virtual void operator()(std::string_view key, bool& v, std::string_view help) = 0;
  virtual void operator()(std::string_view key, std::string& v, std::string_view help) = 0;
  virtual void operator()(std::string_view key, std::vector<std::string>& v,
                          std::string_view help) = 0;
  virtual void operator()(std::string_view key, std::vector<int64_t>& v, std::string_view help) = 0;
  virtual void operator()(std::string_view key, std::vector<double>& v, std::string_view help) = 0;
  // A string from a closed set of names (`choices`); readers reject any other.
  virtual void choice(std::string_view key, std::string& v,
                      std::span<const std::string_view> choices, std::string_view help) = 0;
};

// A value out of its range, named with what it must be (one line: "field 'x': hyper-parameter
// out of range (expected E, got V)").
[[noreturn]] void option_out_of_range(std::string_view key, const std::string& expected,
                                      double got);

// Reads values from a JSON object of overrides; keys it does not hold keep their defaults.
// Every key must be asked for by some visit: check_all_used() names the first unknown one.
class OptionReader final : public OptionVisitor {
 public:
  // `owner` names what the options belong to in messages ("model 'tsmixerx'").
  OptionReader(nlohmann::json values, std::string owner);

  void operator()(std::string_view key, int64_t& v, std::string_view help) override;
  void operator()(std::string_view key, uint64_t& v, std::string_view help) override;
  void operator()(std::string_view key, double& v, std::string_view help) override;
  void operator()(std::string_view key, bool& v, std::string_view help) override;
  void operator()(std::string_view key, std::string& v, std::string_view help) override;
  void operator()(std::string_view key, std::vector<std::string>& v,
                  std::string_view help) override;
  void operator()(std::string_view key, std::vector<int64_t>& v, std::string_view help) override;
  void operator()(std::string_view key, std::vector<double>& v, std::string_view help) override;
  void choice(std::string_view key, std::string& v, std::span<const std::string_view> choices,
              std::string_view help) override;

  // Whether the overrides give `key` (a non-null value); marks it as known.
  bool has(std::string_view key);
  // Throws shoal::Error for the first key no visit asked for, listing the known ones.
  void check_all_used() const;

 private:
  const nlohmann::json* find(std::string_view key);
  double number(std::string_view key, const nlohmann::json& v) const;
  const nlohmann::json values_;  // a copy: readers outlive temporaries
  std::string owner_;
  std::set<std::string, std::less<>> used_;
};

// Writes every visited value into a JSON object (the settings of a run, normalised: defaults
// included, lists as arrays).
class OptionWriter final : public OptionVisitor {
 public:
  void operator()(std::string_view key, int64_t& v, std::string_view help) override;
  void operator()(std::string_view key, uint64_t& v, std::string_view help) override;
  void operator()(std::string_view key, double& v, std::string_view help) override;
  void operator()(std::string_view key, bool& v, std::string_view help) override;
  void operator()(std::string_view key, std::string& v, std::string_view help) override;
  void operator()(std::string_view key, std::vector<std::string>& v,
                  std::string_view help) override;
  void operator()(std::string_view key, std::vector<int64_t>& v, std::string_view help) override;
  void operator()(std::string_view key, std::vector<double>& v, std::string_view help) override;
  void choice(std::string_view key, std::string& v, std::span<const std::string_view> choices,
              std::string_view help) override;
  nlohmann::json json = nlohmann::json::object();
};

// One option as a front end shows it: key, default as text, help, and (choices) the names.
struct OptionInfo {
  std::string key;
  std::string default_text;
  std::string help;
  std::string kind;  // "integer", "number", "flag", "text", "list", "choice"
  std::vector<std::string> choices;
};

// Lists the visited options in order, with their current values as defaults.
class OptionLister final : public OptionVisitor {
 public:
  void operator()(std::string_view key, int64_t& v, std::string_view help) override;
  void operator()(std::string_view key, uint64_t& v, std::string_view help) override;
  void operator()(std::string_view key, double& v, std::string_view help) override;
  void operator()(std::string_view key, bool& v, std::string_view help) override;
  void operator()(std::string_view key, std::string& v, std::string_view help) override;
  void operator()(std::string_view key, std::vector<std::string>& v,
                  std::string_view help) override;
  void operator()(std::string_view key, std::vector<int64_t>& v, std::string_view help) override;
  void operator()(std::string_view key, std::vector<double>& v, std::string_view help) override;
  void choice(std::string_view key, std::string& v, std::span<const std::string_view> choices,
              std::string_view help) override;
  std::vector<OptionInfo> options;

 private:
  void add(std::string_view key, std::string def, std::string_view help, const char* kind);
};

// The text of a JSON value as a user typed it (strings unquoted).
std::string option_text(const nlohmann::json& v);

}  // namespace shoal
