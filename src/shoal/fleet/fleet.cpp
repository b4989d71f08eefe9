#include "shoal/fleet/fleet.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "shoal/core/error.h"
#include "shoal/core/file_io.h"
#include "shoal/core/measure.h"
#include "shoal/core/thread_pool.h"
#include "shoal/profile/recorder.h"

namespace shoal::fleet {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

nlohmann::json record_json(const JobRecord& r) {
  return {{"id", r.id},
          {"ok", r.ok},
          {"error", r.error},
          {"key", r.key},
          {"seconds", r.seconds},
          {"cpu_seconds", r.cpu_seconds},
          {"arena_bytes", r.arena_bytes},
          {"rows", r.output.rows},
          {"metrics", r.output.metrics}};
}

// A crash mid-append leaves a last line without its newline; appending after it would glue the
// next record onto it. Cut the file back to its last complete line first.
void drop_torn_last_line(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.empty() || text.back() == '\n') return;
  const size_t keep = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
  if (::truncate(path.c_str(), static_cast<off_t>(keep)) != 0)
    throw Error("cannot repair the fleet journal's torn last line", ErrorContext{.file = path});
}

// Appends whole lines to the journal with one write() each, then fsync: after a crash the file
// holds complete lines plus at most one partial last line.
class Journal {
 public:
  explicit Journal(const std::string& path) : path_(path) {
    if (path.empty()) return;
    drop_torn_last_line(path);
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw Error(
          "cannot open the fleet journal for writing",
          ErrorContext{.file = path, .expected = "a writable path", .actual = "open failed"});
  }
  ~Journal() {
    if (fd_ >= 0) ::close(fd_);
  }
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  void append(const JobRecord& r) {
    if (fd_ < 0) return;
    const std::string line = record_json(r).dump() + "\n";
    std::lock_guard<std::mutex> lock(mu_);
    size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
      if (n < 0) throw Error("writing the fleet journal failed", ErrorContext{.file = path_});
      done += static_cast<size_t>(n);
    }
    ::fsync(fd_);
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::mutex mu_;
};

// Bytes of planned arenas currently in use, against a limit.
class MemoryBudget {
 public:
  explicit MemoryBudget(size_t limit) : limit_(limit) {}
  bool fits_ever(size_t bytes) const { return limit_ == 0 || bytes <= limit_; }
  void acquire(size_t bytes) {
    if (limit_ == 0) return;
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return in_use_ + bytes <= limit_; });
    in_use_ += bytes;
  }
  void release(size_t bytes) {
    if (limit_ == 0) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_use_ -= bytes;
    }
    cv_.notify_all();
  }

 private:
  size_t limit_;
  size_t in_use_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
};

class Progress {
 public:
  Progress(bool enabled, int64_t total) : enabled_(enabled), total_(total), tty_(isatty(2) != 0) {}
  void update(int64_t done, int64_t failed, double elapsed, bool final) {
    if (!enabled_) return;
    std::lock_guard<std::mutex> lock(mu_);
    const double interval = tty_ ? 0.25 : 5.0;
    if (!final && elapsed - last_ < interval) return;
    last_ = elapsed;
    const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
    const double eta = rate > 0 ? static_cast<double>(total_ - done) / rate : 0;
    const std::string line =
        fmt::format("fleet: {}/{} jobs, {} failed, {:.1f} fits/s, ETA {:.0f} s", done, total_,
                    failed, rate, eta);
    if (tty_) {
      std::fprintf(stderr, "\r%s\033[K%s", line.c_str(), final ? "\n" : "");
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }

 private:
  bool enabled_;
  int64_t total_;
  bool tty_;
  double last_ = -1e9;
  std::mutex mu_;
};

}  // namespace

std::vector<JobRecord> read_journal(const std::string& path) {
  std::vector<JobRecord> out;
  std::ifstream in(path);
  if (!in) return out;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  for (size_t i = 0; i < lines.size(); ++i) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(lines[i]);
      JobRecord r;
      r.id = j.at("id").get<std::string>();
      r.ok = j.at("ok").get<bool>();
      r.error = j.at("error").get<std::string>();
      r.key = j.value("key", std::string());
      r.seconds = j.at("seconds").get<double>();
      r.cpu_seconds = j.value("cpu_seconds", 0.0);
      r.arena_bytes = j.at("arena_bytes").get<size_t>();
      r.output.rows = j.at("rows").get<std::string>();
      r.output.metrics = j.at("metrics");
      r.from_journal = true;
      out.push_back(std::move(r));
    } catch (const nlohmann::json::exception& e) {
      // Only the last line can be cut short by a crash; anything else is real corruption.
      if (i + 1 == lines.size()) break;
      throw Error(fmt::format("corrupt fleet journal line: {}", e.what()),
                  ErrorContext{.file = path,
                               .line = static_cast<int64_t>(i) + 1,
                               .expected = "one JSON record per line"});
    }
  }
  return out;
}

std::vector<JobRecord> run_fleet(const std::vector<Job>& jobs, const FleetConfig& cfg,
                                 FleetSummary* summary) {
  const auto t0 = Clock::now();
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < jobs.size(); ++i) {
    SHOAL_CHECK(index.emplace(jobs[i].id, i).second, "duplicate fleet job id '{}'", jobs[i].id);
  }
  std::vector<JobRecord> records(jobs.size());
  std::vector<char> done(jobs.size(), 0);
  int64_t skipped = 0;
  if (!cfg.journal.empty()) {
    for (JobRecord& r : read_journal(cfg.journal)) {
      auto it = index.find(r.id);
      if (it == index.end() || done[it->second]) continue;  // a job no longer asked for
      const Job& job = jobs[it->second];
      if (r.key != job.key)
        throw Error(fmt::format("the journal holds job '{}' run with other settings or data, "
                                "so its results are not reused; {}, or write elsewhere",
                                r.id, cfg.start_afresh),
                    ErrorContext{.file = cfg.journal,
                                 .field = "key",
                                 .expected = job.key.empty() ? "(none)" : job.key,
                                 .actual = r.key.empty() ? "(none)" : r.key});
      done[it->second] = 1;
      records[it->second] = std::move(r);
      ++skipped;
    }
  }
  std::vector<size_t> todo;
  for (size_t i = 0; i < jobs.size(); ++i)
    if (!done[i]) todo.push_back(i);

  Journal journal(cfg.journal);
  MemoryBudget budget(cfg.memory_limit);
  Progress progress(cfg.progress, static_cast<int64_t>(jobs.size()));
  std::atomic<size_t> next{0};
  std::atomic<int64_t> finished{skipped}, failed{0};
  for (const JobRecord& r : records)
    if (r.from_journal && !r.ok) ++failed;
  const int workers =
      std::max(1, std::min<int>(ThreadPool::resolve(cfg.workers),
                                static_cast<int>(std::max<size_t>(todo.size(), 1))));
  const std::vector<int> cpus = allowed_cpus();
  // Profiler: scheduling zones (registered here, before the workers start).
  profile::Recorder* prof = cfg.profiler;
  profile::ZoneId z_job = profile::kStepZone, z_wait = profile::kStepZone,
                  z_journal = profile::kStepZone;
  if (prof != nullptr) {
    z_job = prof->zone("fleet.job", profile::Category::kOther);
    z_wait = prof->zone("fleet.memory_wait", profile::Category::kIdle);
    z_journal = prof->zone("fleet.journal", profile::Category::kOther);
  }

  auto work = [&](int w) {
    std::optional<ScopedPin> pin;
    if (cfg.pin) pin.emplace(cpus[static_cast<size_t>(w) % cpus.size()]);
    for (;;) {
      if (cfg.stop && cfg.stop->load()) return;
      const size_t k = next.fetch_add(1);
      if (k >= todo.size()) return;
      const Job& job = jobs[todo[k]];
      JobRecord r;
      r.id = job.id;
      r.key = job.key;
      r.arena_bytes = job.arena_bytes;
      const auto start = Clock::now();
      const double cpu_start = thread_cpu_seconds();
      profile::ZoneChain job_zone(prof, 0);
      job_zone.next(z_job);
      profile::ZoneChain zone(prof, 0);
      if (!budget.fits_ever(job.arena_bytes)) {
        r.error = fmt::format("job needs {} bytes of arena but --memory-limit is {} bytes",
                              job.arena_bytes, cfg.memory_limit);
      } else {
        zone.next(z_wait);
        budget.acquire(job.arena_bytes);
        zone.close();
        try {
          r.output = job.run();
          r.ok = true;
        } catch (const std::exception& e) {
          r.error = e.what();
        }
        budget.release(job.arena_bytes);
      }
      r.seconds = seconds_since(start);
      r.cpu_seconds = thread_cpu_seconds() - cpu_start;
      zone.next(z_journal);
      journal.append(r);
      zone.close();
      job_zone.close();
      if (!r.ok) ++failed;
      records[todo[k]] = std::move(r);
      done[todo[k]] = 1;
      progress.update(++finished, failed.load(), seconds_since(t0), false);
    }
  };
  std::vector<std::thread> threads;
  for (int w = 1; w < workers; ++w) {
    try {
      threads.emplace_back(work, w);
    } catch (const std::system_error&) {
      break;  // the system has no more threads to give: the workers started share the queue
    }
  }
  work(0);
  for (auto& t : threads) t.join();

  FleetSummary s;
  s.jobs = static_cast<int64_t>(jobs.size());
  s.skipped = skipped;
  s.workers = static_cast<int>(threads.size()) + 1;
  std::vector<double> fit_s, fit_cpu_s;
  std::vector<size_t> bytes;
  for (size_t i = 0; i < jobs.size(); ++i) {
    JobRecord& r = records[i];
    if (!done[i]) {
      r.id = jobs[i].id;
      r.error = "not run";
      ++s.not_run;
      continue;
    }
    if (!r.ok) ++s.failed;
    if (r.ok && !r.from_journal) {
      fit_s.push_back(r.seconds);
      fit_cpu_s.push_back(r.cpu_seconds);
    }
    if (r.arena_bytes) bytes.push_back(r.arena_bytes);
  }
  s.wall_s = seconds_since(t0);
  // Fits: successful jobs of this invocation (a failure is not a fit, and it is often instant).
  const double ran = static_cast<double>(fit_s.size());
  s.fits_per_s = s.wall_s > 0 ? ran / s.wall_s : 0;
  s.fit_s_median = median(fit_s);
  s.fit_cpu_s_median = median(fit_cpu_s);
  s.arena_bytes_median = median(bytes);
  if (prof != nullptr && !bytes.empty()) {
    profile::FleetMemory fm;
    fm.fits = static_cast<int64_t>(bytes.size());
    fm.per_fit_median = static_cast<uint64_t>(s.arena_bytes_median);
    fm.per_fit_max = *std::max_element(bytes.begin(), bytes.end());
    fm.budget = cfg.memory_limit;
    fm.workers = workers;
    prof->set_fleet_memory(fm);
  }
  progress.update(finished.load(), failed.load(), s.wall_s, true);
  if (summary) *summary = s;
  return records;
}

nlohmann::json summary_json(const FleetSummary& s) {
  return {{"jobs", s.jobs},
          {"failed", s.failed},
          {"skipped", s.skipped},
          {"not_run", s.not_run},
          {"wall_s", s.wall_s},
          {"fits_per_s", s.fits_per_s},
          {"fit_s_median", s.fit_s_median},
          {"fit_cpu_s_median", s.fit_cpu_s_median},
          {"threads", s.workers},
          {"arena_bytes_median", s.arena_bytes_median}};
}

}  // namespace shoal::fleet
