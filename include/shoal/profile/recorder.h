// The profiler's recording path: zones (named, categorised time ranges with an analytic cost),
// recorded per thread into buffers preallocated (and faulted in) when the Recorder is built. The
// hot path takes no lock, allocates nothing and touches only the calling thread's slot: two TSC
// reads, a push and a pop on a fixed 64-deep stack, a stats update (count, total, self, min,
// max, a log histogram for p99, one call behind) and, in trace mode, one 24-byte event. A full
// event buffer drops the event and counts it; stats are still updated, so the table stays exact.
//
// Zones are registered by name ahead of their use (at plan time, or when a fleet worker sets up
// a fit), so the hot path handles only a 32-bit id. Costs are affine in the rows a call processes
// (cost.h), so an event carries its row count and FLOPs and bytes are exact per call.
//
// Steps: step() marks a step boundary like torch.profiler's prof.step(); everything the calling
// thread (the "main" thread) does between two boundaries lies inside that step's zone
// "ProfilerStep#N", so the step zones tile the recorded wall time and the breakdown by category
// sums to it exactly. The schedule decides, per step, whether zones record.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/core/ctx.h"
#include "shoal/profile/clock.h"
#include "shoal/profile/cost.h"
#include "shoal/profile/memory.h"

namespace shoal::profile {

// Where a zone's self time goes in the step breakdown. kStep is the step zone itself: its self
// time (main-thread time in a step outside every other zone) is reported as "other".
enum class Category : uint8_t {
  kData,
  kForward,
  kBackward,
  kOptimizer,
  kEval,
  kIdle,  // waiting: the caller of a fork-join region after its own share, a barrier
  kOther,
  kStep,
};
inline constexpr int kCategoryCount = 8;
const char* category_name(Category c);

enum class Mode : uint8_t { kOff, kStats, kTrace };
Mode parse_mode(std::string_view s);  // "off" | "stats" | "trace"; throws shoal::Error
const char* mode_name(Mode m);

// torch.profiler.schedule: skip `skip_first` steps, then cycle wait → warmup → active,
// `repeat` times (0 = forever). Warmup steps record but are discarded when the first active
// step begins. The default records every step.
struct Schedule {
  int skip_first = 0;
  int wait = 0;
  int warmup = 0;
  int active = 0;  // 0: no schedule, every step records
  int repeat = 0;
  enum class Action : uint8_t { kNone, kWarmup, kRecord };
  Action action(int64_t step) const;
};

using ZoneId = uint32_t;
inline constexpr ZoneId kStepZone = 0;  // registered by every Recorder as "ProfilerStep"

struct RecorderConfig {
  Mode mode = Mode::kStats;
  Schedule schedule;
  int max_threads = 0;                  // 0: hardware threads + 2
  int max_zones = 256;                  // distinct zone names
  int64_t events_per_thread = 1 << 16;  // trace mode ring of 24-byte events (1.5 MiB)
};

struct ZoneInfo {
  std::string name;
  Category category = Category::kOther;
  AffineCost cost;  // FLOPs and bytes of one call as a function of its rows
  int model = 0;    // trace process (one per fleet model)
};

// One completed zone (trace mode). Ticks are raw clock ticks; `rows` is the row count the call
// processed (for the step zone: the step number).
struct Event {
  uint64_t t0;
  uint64_t t1;
  ZoneId zone;
  uint32_t rows;
};

inline constexpr int kHistBuckets = 256;  // 4 per octave of ticks
struct ZoneStats {
  uint64_t calls;
  uint64_t total;  // ticks, inclusive
  uint64_t self;   // ticks, excluding child zones on the same thread
  uint64_t min;
  uint64_t max;
  uint64_t rows;  // Σ rows of all calls (FLOPs = per_row·rows + fixed·calls)
  // The histogram lags one call: each end adds the *previous* call's duration (`pending`, 0
  // before the first, so bucket 0 holds one count too many) and stop() settles both. The
  // bucket's address then does not wait for this call's clock read, which on the test VM took
  // the increment off the critical path: 31 → ~23 ns per zone.
  uint64_t pending;
  uint32_t hist[kHistBuckets];
};
// Inline: it runs on every zone end.
inline int hist_bucket(uint64_t ticks) {
  if (ticks < 4) return static_cast<int>(ticks);
  const int octave = 63 - __builtin_clzll(ticks);  // ≥ 2
  const int sub = static_cast<int>((ticks >> (octave - 2)) & 3);
  const int b = octave * 4 + sub;
  return b < kHistBuckets ? b : kHistBuckets - 1;
}
uint64_t hist_bucket_mid(int bucket);  // a representative tick count of a bucket

class Recorder {
 public:
  explicit Recorder(RecorderConfig cfg = {});
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Registration. A name already registered for the same model returns the existing id, so
  // replicas of a model share their zones. Thread-safe (a mutex; never on the hot path) and
  // allowed while recording, so a fleet worker can register the zones of the model it is about
  // to fit: the hot path reads only the per-id category, written before the id is returned.
  ZoneId zone(std::string_view name, Category category, AffineCost cost = {}, int model = 0);
  void set_model_name(int model, std::string name);
  // A fresh model index (trace process) named `name`, for one fit of a fleet. Thread-safe.
  int add_model(std::string name);
  // Whether the calling thread may call step() now: it called start() and has no zone open
  // besides the step zone (so a fit run inside a fleet job zone does not mark steps).
  bool can_step();
  const std::vector<ZoneInfo>& zones() const { return zones_; }
  // The memory view (memory.h), recorded when a trainer attaches: one plan per model index, the
  // first kept (a fleet's shared trace process shows its first fit). Thread-safe, plan time.
  void add_memory(MemoryPlan plan);
  void set_fleet_memory(const FleetMemory& fleet);
  std::vector<MemoryPlan> memory() const;
  FleetMemory fleet_memory() const;
  const std::vector<std::string>& model_names() const { return model_names_; }
  // Thread-safe (a fleet worker adds models meanwhile); empty for an index never named.
  std::string model_name(int model);

  // start(): the calling thread becomes the main thread and step 0 begins. stop() closes the
  // open step. Zones on other threads must be closed by then (fork-join regions joined).
  void start();
  void step();
  void stop();

  struct ThreadState;
  // Hot path. begin() returns null when nothing is recorded (mode off, schedule idle, too many
  // threads); otherwise the calling thread's slot, which the matching end() takes (Zone does
  // this).
  ThreadState* begin(ZoneId id, uint32_t rows) {
    if (!recording_.load(std::memory_order_relaxed)) return nullptr;
    ThreadState* t = thread_state();
    if (t != nullptr) *push(*t, id, rows) = clock_.now();  // the clock read last
    return t;
  }
  void end(ThreadState* t) { pop(*t, clock_.now()); }
  // end(t) then begin(id, rows) at the same instant: one clock read for two zone edges (the
  // next zone of a ZoneChain starts where the last one ended). `t` is begin()'s non-null slot.
  void end_begin(ThreadState* t, ZoneId id, uint32_t rows) {
    const uint64_t now = clock_.now();
    pop(*t, now);
    *push(*t, id, rows) = now;
  }

  // Results (after stop()).
  const RecorderConfig& config() const { return cfg_; }
  Mode mode() const { return cfg_.mode; }
  const Clock& clock() const { return clock_; }
  int threads_seen() const { return n_threads_.load(); }
  const ZoneStats& stats(int thread, ZoneId id) const;
  // Self time of `thread` by effective category: a zone's own, except that everything inside an
  // eval zone is eval and the step zone's self time is other. Sums to the thread's zone time.
  uint64_t category_ticks(int thread, Category c) const;
  const Event* events(int thread) const;
  int64_t event_count(int thread) const;
  uint64_t dropped_events() const;
  uint64_t lost_threads() const { return lost_threads_.load(); }  // threads beyond max_threads
  int64_t steps_recorded() const { return static_cast<int64_t>(stats(0, kStepZone).calls); }
  int64_t steps_seen() const { return step_; }
  uint64_t wall_ticks() const { return stats(0, kStepZone).total; }  // Σ recorded steps
  uint64_t session_start_ticks() const { return session_t0_; }
  int main_thread() const { return 0; }

 private:
  struct Frame {
    uint64_t t0;
    uint64_t child;
    ZoneId id;
    uint32_t rows;
    uint8_t category;  // effective: kEval when inside an eval zone, kOther for the step zone
  };
  static constexpr int kMaxDepth = 64;

 public:
  struct ThreadState {
    Frame stack[kMaxDepth];
    int depth = 0;
    int64_t n_events = 0;
    uint64_t dropped = 0;
    uint64_t overdeep = 0;
    uint64_t scratch = 0;
    Event* events = nullptr;
    ZoneStats* stats = nullptr;
    uint64_t category_ticks[kCategoryCount] = {};  // self time by effective category
    std::atomic<const void*> owner{nullptr};       // the owning thread's Cache (identity)
  };

 private:
  ThreadState* thread_state() {
    thread_local Cache cache;
    if (cache.owner == id_) [[likely]]
      return cache.state;
    return attach(cache);
  }
  struct Cache {
    uint64_t owner = 0;
    ThreadState* state = nullptr;
  };
  ThreadState* attach(Cache& cache);

  // Opens a frame; returns where its start time goes (a scratch word when too deep).
  uint64_t* push(ThreadState& t, ZoneId id, uint32_t rows) {
    if (t.depth >= kMaxDepth) [[unlikely]] {
      ++t.overdeep;
      ++t.depth;
      return &t.scratch;
    }
    Frame& f = t.stack[t.depth];
    f.id = id;
    f.rows = rows;
    f.child = 0;
    const uint8_t own = categories_[id];
    f.category = t.depth > 0 && t.stack[t.depth - 1].category == kEvalCat ? kEvalCat : own;
    ++t.depth;
    return &f.t0;
  }
  void pop(ThreadState& t, uint64_t t1) {
    if (--t.depth >= kMaxDepth) [[unlikely]]
      return;
    const Frame& f = t.stack[t.depth];
    const uint64_t dur = t1 - f.t0;
    if (t.depth > 0) t.stack[t.depth - 1].child += dur;
    ZoneStats& s = t.stats[f.id];
    ++s.calls;
    s.total += dur;
    s.self += dur - f.child;
    t.category_ticks[f.category] += dur - f.child;
    s.rows += f.rows;
    if (dur < s.min) s.min = dur;
    if (dur > s.max) s.max = dur;
    ++s.hist[hist_bucket(s.pending)];
    s.pending = dur;
    if (cfg_.mode == Mode::kTrace) {
      if (t.n_events < cfg_.events_per_thread) [[likely]]
        t.events[t.n_events++] = Event{f.t0, t1, f.id, f.rows};
      else
        ++t.dropped;
    }
  }
  void clear_recorded();
  void settle_histograms();
  void begin_step_zone();
  void end_step_zone();

  static constexpr uint8_t kEvalCat = static_cast<uint8_t>(Category::kEval);
  RecorderConfig cfg_;
  Clock clock_;
  std::mutex registry_mu_;                 // zones_ and model_names_ (registration only)
  std::unique_ptr<uint8_t[]> categories_;  // zone id → category, for the hot path
  uint64_t id_;
  std::vector<ZoneInfo> zones_;
  std::vector<std::string> model_names_;
  mutable std::mutex memory_mu_;
  std::vector<MemoryPlan> memory_;
  FleetMemory fleet_memory_;
  std::unique_ptr<ThreadState[]> threads_;
  std::unique_ptr<Event[]> event_memory_;
  std::unique_ptr<ZoneStats[]> stats_memory_;
  std::atomic<int> n_threads_{0};
  std::atomic<uint64_t> lost_threads_{0};
  std::atomic<bool> recording_{false};
  bool started_ = false;
  bool step_open_ = false;
  int64_t step_ = 0;
  uint64_t session_t0_ = 0;
};

// An explicit RAII zone. With a null recorder (profiling off) it costs a null check.
class Zone {
 public:
  Zone(Recorder* r, ZoneId id, uint32_t rows = 0) : r_(r) {
    if (r_ != nullptr) t_ = r_->begin(id, rows);
  }
  Zone(const Ctx& ctx, ZoneId id, uint32_t rows = 0) : Zone(ctx.profiler, id, rows) {}
  template <class I>
  Zone(const Ctx& ctx, ZoneId id, I rows) : Zone(ctx.profiler, id, static_cast<uint32_t>(rows)) {}
  ~Zone() {
    if (t_ != nullptr) r_->end(t_);
  }
  Zone(const Zone&) = delete;
  Zone& operator=(const Zone&) = delete;

 private:
  Recorder* r_;
  Recorder::ThreadState* t_ = nullptr;
};

// Consecutive zones of one scope, one line per zone: next(id) closes the open zone (if any) and
// opens `id`; the destructor closes the last. Instruments a sequence of layer calls without
// wrapping each in a block. A null recorder costs a null check per next().
class ZoneChain {
 public:
  ZoneChain(Recorder* r, uint32_t rows) : r_(r), rows_(rows) {}
  template <class I>
  ZoneChain(Recorder* r, I rows) : ZoneChain(r, static_cast<uint32_t>(rows)) {}
  ~ZoneChain() { close(); }
  ZoneChain(const ZoneChain&) = delete;
  ZoneChain& operator=(const ZoneChain&) = delete;
  // next(kStepZone), the id of an unregistered LayerZones (a layer the model lacks), only closes.
  void next(ZoneId id) { next(id, rows_); }
  // A zone of this chain whose call processes `rows` rather than the chain's rows.
  void next(ZoneId id, uint32_t rows) {
    if (t_ != nullptr && id != kStepZone) return r_->end_begin(t_, id, rows);
    close();
    if (r_ != nullptr && id != kStepZone) t_ = r_->begin(id, rows);
  }
  void close() {
    if (t_ != nullptr) r_->end(t_);
    t_ = nullptr;
  }

 private:
  Recorder* r_;
  uint32_t rows_;
  Recorder::ThreadState* t_ = nullptr;
};

// Zone ids of a layer call site, registered by the model that names the layer.
struct LayerZones {
  ZoneId forward = kStepZone;
  ZoneId backward = kStepZone;
  bool registered() const { return forward != kStepZone; }
};

}  // namespace shoal::profile
