#include "cli/commands.h"

namespace shoal::cli {

void register_mlp(CLI::App& app) {
  auto* mlp = app.add_subcommand("mlp", "Train the MLP demo");
  mlp->require_subcommand(1);
}

}  // namespace shoal::cli
