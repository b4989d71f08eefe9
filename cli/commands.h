// Each CLI area registers its subcommands on the root app; main() only wires them up.
#pragma once

#include <CLI/CLI.hpp>

namespace shoal::cli {

// `shoal bench ...`: kernels, peak (and later profiler, fleet).
void register_bench(CLI::App& app);
// `shoal bench tsmixerx` (cli/bench_tsmixerx.cpp), added under the bench command.
void register_bench_tsmixerx(CLI::App& bench);
// `shoal mlp ...`: the MLP demo trainer.
void register_mlp(CLI::App& app);
// `shoal forecast`: time-series forecasting (seasonal naive now, TSMixer(x) to come).
void register_forecast(CLI::App& app);
// `shoal ncf ...` and `shoal synth ncf`: NCF / NeuMF recommenders.
void register_ncf(CLI::App& app);
// `shoal fleet`: many independent fits from a jobs file.
void register_fleet(CLI::App& app);
// `shoal bench fleet`: fleet scaling (1 vs 2 workers) on M3 monthly, with the peer.
void register_bench_fleet(CLI::App& app);

}  // namespace shoal::cli
