#include "cli/model_options.h"

#include <algorithm>

#include <fmt/format.h>

namespace shoal::cli {
namespace {

std::string flag_name(const std::string& key) {
  std::string f = key;
  std::replace(f.begin(), f.end(), '_', '-');
  return "--" + f;
}

}  // namespace

void OptionFlags::add(CLI::App& cmd,
                      const std::vector<std::pair<std::string, std::vector<OptionInfo>>>& owners,
                      const std::vector<std::pair<std::string, std::string>>& aliases,
                      const std::vector<std::string>& skip) {
  // Each key once, in first-seen order, with every owner's default.
  std::vector<std::string> order;
  std::map<std::string, OptionInfo> info;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> defaults;
  for (const auto& [owner, options] : owners)
    for (const OptionInfo& o : options) {
      if (std::find(skip.begin(), skip.end(), o.key) != skip.end()) continue;
      if (info.emplace(o.key, o).second) order.push_back(o.key);
      defaults[o.key].emplace_back(owner, o.default_text);
    }
  for (const std::string& key : order) {
    const OptionInfo& o = info.at(key);
    const auto& defs = defaults.at(key);
    const bool same = std::all_of(defs.begin(), defs.end(),
                                  [&](const auto& d) { return d.second == defs[0].second; });
    std::string def;
    if (same) {
      def = defs[0].second.empty() ? "" : fmt::format(" (default {})", defs[0].second);
    } else {
      for (const auto& [owner, text] : defs)
        def += fmt::format("{}{} {}", def.empty() ? " (default: " : ", ", owner, text);
      def += ")";
    }
    std::string help = o.help;
    if (!o.choices.empty()) help += ": " + fmt::format("{}", fmt::join(o.choices, ", "));
    if (same && defs.size() < owners.size()) {
      std::string who;
      for (const auto& d : defs) who += (who.empty() ? "" : ", ") + d.first;
      help += " [" + who + "]";
    }
    Flag& f = flags_[key];
    f.list = o.kind == "list";
    // An alias of another key keeps its spelling: this key then goes by its aliases only
    // (--batch-size stays windows_batch_size; batch_size is --series-batch-size).
    std::string names = flag_name(key);
    for (const auto& [alias, target] : aliases)
      if (target != key && "--" + alias == names) names.clear();
    for (const auto& [alias, target] : aliases)
      if (target == key) names += (names.empty() ? "--" : ",--") + alias;
    CLI::Option* opt = cmd.add_option(names, f.values, help + def);
    opt->type_name(o.kind == "integer"  ? "INT"
                   : o.kind == "number" ? "FLOAT"
                   : o.kind == "flag"   ? "BOOL"
                   : o.kind == "list"   ? "LIST"
                                        : "TEXT");
    // A list flag is kept as written ("8,,4") and split by the one option parser, which
    // refuses an empty item; CLI11's delimiter would drop it without a word.
    if (f.list)
      opt->expected(1, 1 << 20);
    else
      opt->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
}

nlohmann::json OptionFlags::given() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, f] : flags_) {
    if (f.values.empty()) continue;
    if (f.list)
      j[key] = fmt::format("{}", fmt::join(f.values, ","));
    else
      j[key] = f.values.back();
  }
  return j;
}

bool OptionFlags::has(const std::string& key) const {
  auto it = flags_.find(key);
  return it != flags_.end() && !it->second.values.empty();
}

}  // namespace shoal::cli
