#include "cli/stop_signal.h"

#include <csignal>

#include "cli/commands.h"

namespace shoal::cli {

namespace {
std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
extern "C" void on_stop_signal(int sig) {
  int none = 0;
  g_signal.compare_exchange_strong(none, sig);
  g_stop.store(true);
  std::signal(sig, SIG_DFL);  // a second one ends the process at once
}
}  // namespace

StopOnSignals::StopOnSignals() {
  g_stop.store(false);
  g_signal.store(0);
  old_int_ = std::signal(SIGINT, on_stop_signal);
  old_term_ = std::signal(SIGTERM, on_stop_signal);
}

StopOnSignals::~StopOnSignals() {
  std::signal(SIGINT, old_int_);
  std::signal(SIGTERM, old_term_);
}

std::atomic<bool>* StopOnSignals::flag() {
  return &g_stop;
}

int StopOnSignals::signal_number() {
  return g_signal.load();
}

void exit_interrupted(const std::string& message) {
  const int sig = StopOnSignals::signal_number();
  throw ExitStatus(128 + (sig > 0 ? sig : SIGINT), message);
}

}  // namespace shoal::cli
