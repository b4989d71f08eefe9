#include <cstdio>
#include <exception>
#include <string>

#include "cli/commands.h"
#include "shoal/core/error.h"
#include "shoal/kernels/blas.h"
#include "shoal/kernels/isa.h"
#include "shoal/profile/machine.h"

namespace {

// What runs on this machine, for bug reports and for comparing figures between machines.
std::string version_text() {
  return std::string("shoal ") + SHOAL_VERSION + "\ncpu: " + shoal::profile::cpu_model_name() +
         "\n" + shoal::kernels::describe_isa() + "\n" +
         shoal::kernels::describe_blas(shoal::kernels::blas_info());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"shoal: train small neural networks at hardware speed on CPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text);
  shoal::cli::register_mlp(app);
  shoal::cli::register_forecast(app);
  shoal::cli::register_ncf(app);
  shoal::cli::register_fleet(app);
  shoal::cli::register_tune(app);
  shoal::cli::register_profile(app);
#if SHOAL_HAVE_BENCH
  shoal::cli::register_bench(app);
#endif
  try {
    // SHOAL_ISA is settled before anything runs: a bad value stops here with its message, not
    // inside the first kernel a worker thread calls.
    shoal::kernels::active_isa();
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    // Bad command lines get the same one-line form as bad input.
    std::fprintf(stderr, "shoal: error: %s (see shoal --help)\n", e.what());
    return 2;
  } catch (const shoal::cli::ExitStatus& e) {
    if (e.what()[0] != '\0') std::fprintf(stderr, "shoal: error: %s\n", e.what());
    return e.status;
  } catch (const shoal::Error& e) {
    std::fprintf(stderr, "shoal: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shoal: internal error: %s\n", e.what());
    return shoal::cli::kExitInternal;
  }
  return 0;
}
