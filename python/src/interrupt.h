// Runs long C++ work off the Python thread with the GIL released, so that Ctrl-C works: the
// calling thread wakes every 50 ms, takes the GIL and asks Python whether a signal is pending;
// on KeyboardInterrupt it raises `stop`, waits for the work to wind down (the fleet stops
// taking jobs, a fit stops at its next step) and re-raises the Python exception. `on_wake`, when
// given, runs at every wake-up with the GIL held (a progress bar's update); an exception it
// raises stops the work the same way.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <future>
#include <thread>

#include <nanobind/nanobind.h>

namespace shoal::py {

inline void run_interruptible(const std::function<void(const std::atomic<bool>& stop)>& work,
                              const std::function<void()>& on_wake = {}) {
  std::atomic<bool> stop{false};
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  std::thread worker([&] {
    try {
      work(stop);
      done.set_value();
    } catch (...) {
      done.set_exception(std::current_exception());
    }
  });
  for (;;) {
    bool ready = false;
    {
      nanobind::gil_scoped_release release;
      ready = finished.wait_for(std::chrono::milliseconds(50)) == std::future_status::ready;
    }
    if (ready) break;
    auto stop_work = [&] {
      stop.store(true);
      nanobind::gil_scoped_release release;
      worker.join();
    };
    if (PyErr_CheckSignals() != 0) {
      stop_work();
      throw nanobind::python_error();
    }
    if (on_wake) {
      try {
        on_wake();
      } catch (...) {
        stop_work();
        throw;
      }
    }
  }
  worker.join();
  finished.get();  // rethrows the work's exception
}

}  // namespace shoal::py
