// Each CLI area registers its subcommands on the root app; main() only wires them up.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace shoal::cli {

// Exit statuses (docs/errors.md): 0 done; 2 bad input or setup (one line, no output); 3 an
// internal error; 4 partial: some jobs or series failed, outputs written for the rest (listed on
// stderr; --allow-failures makes it 0); 128 + N stopped by signal N (SIGINT 130, SIGTERM 143):
// no output written, the finished work kept in the journal for a rerun to resume.
inline constexpr int kExitError = 2;
inline constexpr int kExitInternal = 3;
inline constexpr int kExitPartial = 4;

// Thrown by a command to end with a status other than 0 or 2: main prints
// "shoal: error: MESSAGE" (when not empty) and exits with `status`.
struct ExitStatus : std::runtime_error {
  ExitStatus(int status_, const std::string& message)
      : std::runtime_error(message), status(status_) {}
  int status;
};

// Caps a --threads value at the CPUs this process may run on, with a note on stderr (more
// workers than CPUs only time-slice). 0 stays 0 (all of them).
int cap_threads(int threads, const char* command);

// A uint64 flag (--seed) as written: digits only, within 0..2^64-1. CLI11 alone would wrap
// "-1" to 2^64-1 and read "1e30" without a word.
inline const CLI::Validator kUint64 = CLI::Validator(
    [](std::string& s) -> std::string {
      const bool digits = !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
      // 2^64-1 has 20 digits: compare as text, same length.
      const std::string max = "18446744073709551615";
      const bool fits = digits && (s.size() < max.size() || (s.size() == max.size() && s <= max));
      return fits ? std::string() : "expected an integer in 0..2^64-1, got " + s;
    },
    "0..2^64-1");

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
// `shoal ncf recommend` and `shoal ncf split` (cli/ncf_use.cpp), on the `ncf` subcommand.
void register_ncf_use(CLI::App& ncf);
// `shoal fleet`: many independent fits from a jobs file.
void register_fleet(CLI::App& app);
void register_tune(CLI::App& app);

// `shoal profile diff A B`: two profiled runs compared (cli/profile.cpp).
void register_profile(CLI::App& app);

// `shoal bench ...` (cli/bench/, built with SHOAL_BUILD_BENCH): kernels, peak, profiler,
// tsmixerx, fusion, fleet, ncf.
void register_bench(CLI::App& app);
// Subcommands of `shoal bench`, one file each under cli/bench/.
void register_bench_tsmixerx(CLI::App& bench);
void register_bench_fusion(CLI::App& bench);
void register_bench_fleet(CLI::App& bench);
void register_bench_ncf(CLI::App& bench);
void register_bench_ncf_recommend(CLI::App& bench);
void register_bench_models(CLI::App& bench);

}  // namespace shoal::cli
