// Ctrl-C (SIGINT) or SIGTERM during a long run (`shoal fleet`, `shoal forecast` per series):
// the first asks the run to stop taking new jobs (running ones finish and are kept in the
// journal, so the same command resumes); a second ends the process at once.
#pragma once

#include <atomic>
#include <string>

namespace shoal::cli {

// Installs the handlers for its lifetime (and clears the flag); the previous ones come back
// after.
class StopOnSignals {
 public:
  StopOnSignals();
  ~StopOnSignals();
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;
  // Set once a signal has arrived (what fleet::FleetConfig::stop reads).
  std::atomic<bool>* flag();
  // The first signal that arrived (0: none).
  static int signal_number();

 private:
  void (*old_int_)(int);
  void (*old_term_)(int);
};

// Ends a stopped run: throws ExitStatus with 128 + the signal (130 for SIGINT, 143 for
// SIGTERM) and `message`, so that no output is written after a stop.
[[noreturn]] void exit_interrupted(const std::string& message);

}  // namespace shoal::cli
