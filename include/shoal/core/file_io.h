// The one way shoal reads and writes files. Every file it writes (forecasts, metrics, checkpoints,
// profiler reports, fleet outputs) goes through write_file_atomic, so a reader sees either the
// old file or the whole new one, never a prefix, even after SIGKILL or a power cut; every saved
// model folder goes through write_save_folder, which swaps a whole new folder in the same way.
//
// The checks a careful tool makes at its edges live here too: an input must be a regular file
// (a directory or FIFO is refused, not read as garbage or waited on forever); an output must be
// a regular file in an existing folder that is not, does not hold and is not inside any input of
// the same call (a model folder being read included); a save folder replaces only an earlier
// save of the same kind, never a folder holding anything else, nor `.`, `..` or a folder holding
// the current directory; and one run at a time writes a given output (an advisory lock).
// Python's shoal package calls these same functions (python/src/file_io.cpp).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shoal {

// Writes `bytes` to a temporary name beside `path` (`path.tmp.<pid>.<n>`), fsyncs it, renames it
// over `path` and fsyncs the folder so the rename itself is durable. On failure the temporary
// file is removed and a shoal::Error names `path` and the system's reason. An existing `path`
// that is not a regular file (a folder, device, FIFO) is refused, never replaced. Temporary
// files beside `path` left by a process that no longer runs are removed first.
void write_file_atomic(const std::string& path, std::string_view bytes);

// A temporary name beside `path` that no other process or thread of this one uses.
std::string temp_path_for(const std::string& path);

// Removes `path.tmp.<pid>[.<n>]` files and folders whose process is gone (a run killed
// mid-write).
void remove_stale_temps(const std::string& path);

// Throws shoal::Error unless `path` is a regular file this process can open for reading: a
// missing file, a folder, a FIFO, socket or device is named as such. `what` names the flag or
// role in the message ("--init-weights"); empty: none.
void check_input_file(const std::string& path, std::string_view what = {});

// The bytes of an input file (after check_input_file).
std::string read_input_file(const std::string& path, std::string_view what = {});

// Throws shoal::Error unless `path` can be written as an output before any work is done: its
// folder exists and is writable, and `path` is not a folder, a device, a FIFO or socket, nor
// the same file as, nor inside, any of `inputs` (files or folders; empty entries are skipped).
// `what` names the flag.
void check_output_path(const std::string& path, const std::vector<std::string>& inputs,
                       std::string_view what);

// Throws shoal::Error unless `path` can take a save folder of kind `format` (the "format" field
// of its manifest, model.json): it is missing, an empty folder, or a folder holding nothing but
// an earlier save of that kind (model.json and the files it lists); it is not `.`, `..`, the
// current directory or a folder above it; it is none of `inputs`, holds none and is inside none;
// its parent exists and is writable.
void check_save_folder(const std::string& path, std::string_view format,
                       const std::vector<std::string>& inputs, std::string_view what);

// The files of a save folder: name (no '/') and bytes; the manifest model.json among them.
using FolderFiles = std::vector<std::pair<std::string, std::string>>;

// Writes `files` into a fresh temporary folder beside `path`, fsyncs them, checks `path` again
// (check_save_folder, no inputs) and swaps the new folder in with one atomic exchange, then
// removes the earlier save: a reader sees the old save or the new one, never a mix, and nothing
// is left beside `path`.
void write_save_folder(const std::string& path, std::string_view format, const FolderFiles& files,
                       std::string_view what);

// The outputs of one call, checked before any work: each against every input of the call (as
// check_output_path / check_save_folder) and against the outputs named before it, so two flags
// naming one file, or one output inside another, are refused.
class OutputPlan {
 public:
  explicit OutputPlan(std::vector<std::string> inputs);
  // A file written with write_file_atomic; empty `path`: the flag was not given.
  OutputPlan& file(const std::string& path, std::string_view what);
  // A save folder of kind `format`, written with write_save_folder.
  OutputPlan& save_folder(const std::string& path, std::string_view format, std::string_view what);
  // A folder that files are written into (made when missing; each of its files is checked as
  // file()): not an existing file, and neither an input folder nor inside one.
  OutputPlan& folder(const std::string& path, std::string_view what);

 private:
  void distinct(const std::string& path, std::string_view what, bool is_folder);
  std::vector<std::string> inputs_;
  std::vector<std::pair<std::string, std::string>> outputs_;  // absolute path, flag
  std::vector<std::string> folders_;                          // folder()s, absolute
};

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
