#include "shoal/profile/recorder.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <thread>

#include "shoal/core/error.h"

namespace shoal::profile {

const char* category_name(Category c) {
  switch (c) {
    case Category::kData:
      return "data";
    case Category::kForward:
      return "forward";
    case Category::kBackward:
      return "backward";
    case Category::kOptimizer:
      return "optimizer";
    case Category::kEval:
      return "eval";
    case Category::kIdle:
      return "idle";
    case Category::kOther:
      return "other";
    case Category::kStep:
      return "step";
  }
  return "other";
}

Mode parse_mode(std::string_view s) {
  if (s == "off") return Mode::kOff;
  if (s == "stats") return Mode::kStats;
  if (s == "trace") return Mode::kTrace;
  throw Error(fmt::format("--profile must be off, stats or trace, got '{}'", s));
}

const char* mode_name(Mode m) {
  return m == Mode::kOff ? "off" : m == Mode::kStats ? "stats" : "trace";
}

Schedule::Action Schedule::action(int64_t step) const {
  if (active <= 0) return Action::kRecord;
  if (step < skip_first) return Action::kNone;
  const int64_t s = step - skip_first;
  const int64_t cycle = static_cast<int64_t>(wait) + warmup + active;
  if (repeat > 0 && s >= cycle * repeat) return Action::kNone;
  const int64_t pos = s % cycle;
  if (pos < wait) return Action::kNone;
  if (pos < wait + warmup) return Action::kWarmup;
  return Action::kRecord;
}

uint64_t hist_bucket_mid(int bucket) {
  if (bucket < 4) return static_cast<uint64_t>(bucket);
  const int octave = bucket / 4, sub = bucket % 4;
  if (octave >= 63) return ~uint64_t{0};
  const uint64_t lo = (uint64_t{4} + static_cast<uint64_t>(sub)) << (octave - 2);
  const uint64_t width = uint64_t{1} << (octave - 2);
  return lo + width / 2;
}

namespace {
std::atomic<uint64_t> g_next_recorder_id{1};
}  // namespace

Recorder::Recorder(RecorderConfig cfg) : cfg_(cfg), id_(g_next_recorder_id.fetch_add(1)) {
  if (cfg_.max_threads <= 0)
    cfg_.max_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) + 2;
  SHOAL_CHECK(cfg_.max_zones >= 2, "profiler needs room for at least 2 zones");
  SHOAL_CHECK(cfg_.events_per_thread >= 0, "events per thread must be ≥ 0");
  const auto nt = static_cast<size_t>(cfg_.max_threads);
  const auto nz = static_cast<size_t>(cfg_.max_zones);
  threads_ = std::make_unique<ThreadState[]>(nt);
  categories_ = std::make_unique<uint8_t[]>(nz);
  stats_memory_ = std::make_unique<ZoneStats[]>(nt * nz);  // value-initialised: zero
  // Value-initialised, so every page is touched (faulted in) here rather than on the hot path:
  // a first write to a fresh page costs a fault of ~1 µs, i.e. ~10 ns per 24-byte event.
  if (cfg_.mode == Mode::kTrace)
    event_memory_ = std::make_unique<Event[]>(nt * static_cast<size_t>(cfg_.events_per_thread));
  for (size_t t = 0; t < nt; ++t) {
    threads_[t].stats = &stats_memory_[t * nz];
    if (event_memory_)
      threads_[t].events = &event_memory_[t * static_cast<size_t>(cfg_.events_per_thread)];
  }
  clear_recorded();
  zones_.reserve(nz);
  zone("ProfilerStep", Category::kStep);
  model_names_.push_back("model");
}

Recorder::~Recorder() = default;

ZoneId Recorder::zone(std::string_view name, Category category, AffineCost cost, int model) {
  std::lock_guard<std::mutex> lock(registry_mu_);
  for (size_t i = 0; i < zones_.size(); ++i)
    if (zones_[i].name == name && zones_[i].model == model) return static_cast<ZoneId>(i);
  SHOAL_CHECK(zones_.size() < static_cast<size_t>(cfg_.max_zones),
              "more than {} profiler zones (raise RecorderConfig::max_zones; for a profiled "
              "fleet, lower --profile-models)",
              cfg_.max_zones);
  SHOAL_CHECK(model >= 0, "model index must be ≥ 0");
  // The category first: a thread that gets the id may use it at once. zones_ was reserved for
  // max_zones at construction, so push_back never moves it.
  categories_[zones_.size()] =
      static_cast<uint8_t>(category == Category::kStep ? Category::kOther : category);
  zones_.push_back({std::string(name), category, cost, model});
  return static_cast<ZoneId>(zones_.size() - 1);
}

int Recorder::add_model(std::string name) {
  std::lock_guard<std::mutex> lock(registry_mu_);
  model_names_.push_back(std::move(name));
  return static_cast<int>(model_names_.size() - 1);
}

std::string Recorder::model_name(int model) {
  std::lock_guard<std::mutex> lock(registry_mu_);
  return model >= 0 && size_t(model) < model_names_.size() ? model_names_[size_t(model)]
                                                           : std::string();
}

void Recorder::add_memory(MemoryPlan plan) {
  std::lock_guard<std::mutex> lock(memory_mu_);
  for (const auto& m : memory_)
    if (m.model_index == plan.model_index) return;
  memory_.push_back(std::move(plan));
}

void Recorder::set_fleet_memory(const FleetMemory& fleet) {
  std::lock_guard<std::mutex> lock(memory_mu_);
  fleet_memory_ = fleet;
}

std::vector<MemoryPlan> Recorder::memory() const {
  std::lock_guard<std::mutex> lock(memory_mu_);
  return memory_;
}

FleetMemory Recorder::fleet_memory() const {
  std::lock_guard<std::mutex> lock(memory_mu_);
  return fleet_memory_;
}

bool Recorder::can_step() {
  return started_ && cfg_.mode != Mode::kOff && thread_state() == &threads_[0] &&
         threads_[0].depth <= 1;
}

void Recorder::set_model_name(int model, std::string name) {
  SHOAL_CHECK(model >= 0, "model index must be ≥ 0");
  std::lock_guard<std::mutex> lock(registry_mu_);
  if (model_names_.size() <= static_cast<size_t>(model))
    model_names_.resize(static_cast<size_t>(model) + 1);
  model_names_[static_cast<size_t>(model)] = std::move(name);
}

Recorder::ThreadState* Recorder::attach(Cache& cache) {
  // A thread that already has a slot here (it used another recorder since) gets it back.
  const int seen = std::min(n_threads_.load(), cfg_.max_threads);
  for (int s = 0; s < seen; ++s)
    if (threads_[static_cast<size_t>(s)].owner.load(std::memory_order_relaxed) == &cache) {
      cache.owner = id_;
      cache.state = &threads_[static_cast<size_t>(s)];
      return cache.state;
    }
  const int slot = n_threads_.fetch_add(1);
  if (slot >= cfg_.max_threads) {
    n_threads_.fetch_sub(1);
    lost_threads_.fetch_add(1);
    return nullptr;  // not cached: retried (and counted) on every zone of this thread
  }
  cache.owner = id_;
  cache.state = &threads_[static_cast<size_t>(slot)];
  cache.state->owner.store(&cache, std::memory_order_relaxed);
  return cache.state;
}

void Recorder::clear_recorded() {
  for (int t = 0; t < cfg_.max_threads; ++t) {
    ThreadState& s = threads_[static_cast<size_t>(t)];
    s.n_events = 0;
    s.dropped = 0;
    s.overdeep = 0;
    for (auto& c : s.category_ticks) c = 0;
    for (int z = 0; z < cfg_.max_zones; ++z) {
      ZoneStats& st = s.stats[z];
      std::memset(&st, 0, sizeof(st));
      st.min = ~uint64_t{0};
    }
  }
}

void Recorder::settle_histograms() {
  const int nt = std::min(n_threads_.load(), cfg_.max_threads);
  for (int t = 0; t < nt; ++t)
    for (int z = 0; z < cfg_.max_zones; ++z) {
      ZoneStats& st = threads_[static_cast<size_t>(t)].stats[z];
      if (st.calls == 0) continue;
      --st.hist[hist_bucket(0)];  // the placeholder the first call added
      ++st.hist[hist_bucket(st.pending)];
      st.pending = 0;
    }
}

void Recorder::begin_step_zone() {
  ThreadState* t = thread_state();
  SHOAL_CHECK(t != nullptr && t == &threads_[0], "profiler steps must come from the main thread");
  *push(*t, kStepZone, static_cast<uint32_t>(step_)) = clock_.now();
  step_open_ = true;
}

void Recorder::end_step_zone() {
  ThreadState& t = threads_[0];
  SHOAL_CHECK(t.depth == 1, "profiler step boundary inside {} open zone(s)", t.depth - 1);
  pop(t, clock_.now());
  step_open_ = false;
}

void Recorder::start() {
  SHOAL_CHECK(!started_, "profiler started twice");
  started_ = true;
  if (cfg_.mode == Mode::kOff) return;
  // The starting thread takes slot 0 (the main thread).
  SHOAL_CHECK(n_threads_.load() == 0, "profiler start() must precede every zone");
  ThreadState* t = thread_state();
  SHOAL_CHECK(t == &threads_[0], "profiler main thread did not get slot 0");
  clock_.begin_session();
  session_t0_ = clock_.now();
  step_ = 0;
  const Schedule::Action a = cfg_.schedule.action(0);
  if (a != Schedule::Action::kNone) {
    recording_.store(true, std::memory_order_relaxed);
    begin_step_zone();
  }
}

void Recorder::step() {
  if (!started_ || cfg_.mode == Mode::kOff) return;
  const Schedule::Action prev = cfg_.schedule.action(step_);
  if (step_open_) end_step_zone();
  ++step_;
  const Schedule::Action next = cfg_.schedule.action(step_);
  if (next == Schedule::Action::kRecord && prev == Schedule::Action::kWarmup) clear_recorded();
  recording_.store(next != Schedule::Action::kNone, std::memory_order_relaxed);
  if (next != Schedule::Action::kNone) begin_step_zone();
}

void Recorder::stop() {
  if (!started_ || cfg_.mode == Mode::kOff) return;
  const Schedule::Action a = cfg_.schedule.action(step_);
  if (step_open_) end_step_zone();
  // A session that ends in warmup recorded nothing worth keeping.
  if (a == Schedule::Action::kWarmup) clear_recorded();
  recording_.store(false, std::memory_order_relaxed);
  settle_histograms();
  clock_.end_session();
  started_ = false;
}

const ZoneStats& Recorder::stats(int thread, ZoneId id) const {
  return threads_[static_cast<size_t>(thread)].stats[id];
}
const Event* Recorder::events(int thread) const {
  return threads_[static_cast<size_t>(thread)].events;
}
int64_t Recorder::event_count(int thread) const {
  return threads_[static_cast<size_t>(thread)].n_events;
}
uint64_t Recorder::category_ticks(int thread, Category c) const {
  return threads_[static_cast<size_t>(thread)].category_ticks[static_cast<int>(c)];
}

uint64_t Recorder::dropped_events() const {
  uint64_t d = 0;
  for (int t = 0; t < cfg_.max_threads; ++t) d += threads_[static_cast<size_t>(t)].dropped;
  return d;
}

}  // namespace shoal::profile
