#include "cli/commands.h"

namespace shoal::cli {

void register_bench(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmarks: print a table, optionally write JSON");
  bench->require_subcommand(1);
}

}  // namespace shoal::cli
