// Ctrl-C (SIGINT) or SIGTERM during a long run (`shoal fleet`, `shoal forecast` per series):
// the first asks the run to stop taking new jobs (running ones finish and are kept in the
// journal, so the same command resumes); a second ends the process at once.
#pragma once

#include <atomic>

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

 private:
  void (*old_int_)(int);
  void (*old_term_)(int);
};

}  // namespace shoal::cli
