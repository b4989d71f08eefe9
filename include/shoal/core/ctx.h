// Ctx: the resources a layer call runs with. It carries no model state, only where and how to
// run: training flag, the seed and step that key dropout masks, the thread slot, the profiler.
#pragma once

#include <cstdint>

namespace shoal {

namespace profile {
class Recorder;
}

struct Ctx {
  bool training = true;
  uint64_t seed = 0;  // run seed; with a layer's stream id and `step` it keys every random mask
  uint64_t step = 0;  // optimizer step (0-based) of the current forward/backward
  int thread = 0;     // this call's thread slot in [0, n_threads)
  int n_threads = 1;
  profile::Recorder* profiler = nullptr;  // null: profiling off
};

}  // namespace shoal
