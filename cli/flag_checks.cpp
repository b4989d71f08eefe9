// Checks of numeric flags shared by the commands (cli/commands.h).
#include <cstdio>

#include <fmt/format.h>

#include "cli/commands.h"
#include "shoal/core/error.h"
#include "shoal/core/thread_pool.h"

namespace shoal::cli {

int cap_threads(int threads, const char* command) {
  SHOAL_CHECK(threads >= 0, "--threads must be ≥ 0 (0: all cores), got {}", threads);
  const int cpus = static_cast<int>(allowed_cpus().size());
  if (threads <= cpus || cpus <= 0) return threads;
  fmt::print(stderr,
             "shoal {}: --threads {} is more than the {} CPUs this process may use; using {}\n",
             command, threads, cpus, cpus);
  return cpus;
}

}  // namespace shoal::cli
