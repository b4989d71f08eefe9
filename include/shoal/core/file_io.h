// Crash-safe output files: every file shoal writes (forecasts, metrics, checkpoints, profiler
// reports, fleet outputs) goes through write_file_atomic, so a reader sees either the old file or
// the whole new one, never a prefix, even after SIGKILL or a power cut.
//
// The checks a careful tool makes at its edges live here too: an input must be a regular file
// (a directory or FIFO is refused, not read as garbage or waited on forever), an output must be
// a regular file in an existing folder and none of the run's inputs, and one run at a time
// writes a given output (an advisory lock).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace shoal {

// Writes `bytes` to a temporary name beside `path` (`path.tmp.<pid>`), fsyncs it, renames it
// over `path` and fsyncs the folder so the rename itself is durable. On failure the temporary
// file is removed and a shoal::Error names `path` and the system's reason. An existing `path`
// that is not a regular file (a folder, device, FIFO) is refused, never replaced. Temporary
// files beside `path` left by a process that no longer runs are removed first.
void write_file_atomic(const std::string& path, std::string_view bytes);

// The temporary name write_file_atomic uses for `path` in this process (tests look for leftovers).
std::string temp_path_for(const std::string& path);

// Removes `path.tmp.<pid>` files whose process is gone (a run killed mid-write).
void remove_stale_temps(const std::string& path);

// Throws shoal::Error unless `path` is a regular file this process can open for reading: a
// missing file, a folder, a FIFO, socket or device is named as such. `what` names the flag or
// role in the message ("--init-weights"); empty: none.
void check_input_file(const std::string& path, std::string_view what = {});

// The bytes of an input file (after check_input_file).
std::string read_input_file(const std::string& path, std::string_view what = {});

// Throws shoal::Error unless `path` can be written as an output before any work is done: its
// folder exists and is writable, and `path` is not a folder, a device, a FIFO or socket, nor
// the same file as any of `inputs` (empty entries are skipped). `what` names the flag.
void check_output_path(const std::string& path, const std::vector<std::string>& inputs,
                       std::string_view what);

// An exclusive advisory lock (flock) on `lock_path`, created when missing and removed on release:
// a second process asking for it fails at once with a shoal::Error naming `what` (the output the
// lock guards), instead of both runs writing the same files.
class OutputLock {
 public:
  OutputLock(std::string lock_path, std::string what);
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace shoal
