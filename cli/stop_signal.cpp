#include "cli/stop_signal.h"

#include <csignal>

namespace shoal::cli {

namespace {
std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int sig) {
  g_stop.store(true);
  std::signal(sig, SIG_DFL);  // a second one ends the process at once
}
}  // namespace

StopOnSignals::StopOnSignals() {
  g_stop.store(false);
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

}  // namespace shoal::cli
