// Command-line flags made from models' option lists (core/options.h): each option `some_key`
// becomes `--some-key VALUE`, with its help and default, so every option a model takes is
// reachable from the CLI under the name jobs files and Python use. The values given are
// collected into the one key–value form the engine parses.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "shoal/core/options.h"

namespace shoal::cli {

class OptionFlags {
 public:
  // `owners`: (model name, its options) pairs; an option several models take is one flag,
  // its help listing each model's default where they differ. `aliases`: (flag without dashes,
  // key) pairs for extra spellings, e.g. {"seed", "random_seed"}. Keys in `skip` get no flag
  // (the command handles them itself).
  void add(CLI::App& cmd,
           const std::vector<std::pair<std::string, std::vector<OptionInfo>>>& owners,
           const std::vector<std::pair<std::string, std::string>>& aliases = {},
           const std::vector<std::string>& skip = {});
  // The options given on the command line, as a JSON object (key → text or list).
  nlohmann::json given() const;
  // Whether `key` was given.
  bool has(const std::string& key) const;

 private:
  struct Flag {
    bool list = false;
    std::vector<std::string> values;
  };
  std::map<std::string, Flag> flags_;  // by key; node addresses are stable for CLI11
};

}  // namespace shoal::cli
