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

// `shoal mlp ...`: the MLP demo trainer.
void register_mlp(CLI::App& app);
// `shoal forecast`: time-series forecasting (seasonal naive now, TSMixer(x) to come).
void register_forecast(CLI::App& app);
// `shoal ncf ...` and `shoal synth ncf`: NCF / NeuMF recommenders.
void register_ncf(CLI::App& app);
// `shoal fleet`: many independent fits from a jobs file.
void register_fleet(CLI::App& app);

// `shoal bench ...` (cli/bench/, built with SHOAL_BUILD_BENCH): kernels, peak, profiler,
// tsmixerx, fusion, fleet, ncf.
void register_bench(CLI::App& app);
// Subcommands of `shoal bench`, one file each under cli/bench/.
void register_bench_tsmixerx(CLI::App& bench);
void register_bench_fusion(CLI::App& bench);
void register_bench_fleet(CLI::App& bench);
void register_bench_ncf(CLI::App& bench);

}  // namespace shoal::cli
