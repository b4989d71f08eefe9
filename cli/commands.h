// Each CLI area registers its subcommands on the root app; main() only wires them up.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <string>

namespace shoal::cli {

// Option checks whose message reads like shoal's others ("--lr: expected a number > 0, got 0"):
// CLI11's PositiveNumber prints its range up to DBL_MAX in full.
inline CLI::Validator number_check(bool allow_zero) {
  return CLI::Validator(
      [allow_zero](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        const bool ok = !s.empty() && end == s.c_str() + s.size() && (allow_zero ? v >= 0 : v > 0);
        return ok ? std::string()
                  : (allow_zero ? "expected a number ≥ 0, got " : "expected a number > 0, got ") +
                        s;
      },
      allow_zero ? "≥ 0" : "> 0");
}
inline const CLI::Validator kPositive = number_check(false);
inline const CLI::Validator kNonNegative = number_check(true);

// `shoal bench ...`: kernels, peak (and later profiler, fleet).
void register_bench(CLI::App& app);
// `shoal bench tsmixerx` (cli/bench_tsmixerx.cpp), added under the bench command.
void register_bench_tsmixerx(CLI::App& bench);
// `shoal bench fusion` (cli/bench_fusion.cpp): horizontal fusion vs one model after another.
void register_bench_fusion(CLI::App& bench);
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
