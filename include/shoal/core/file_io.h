// Crash-safe output files: every file shoal writes (forecasts, metrics, checkpoints, profiler
// reports, fleet outputs) goes through write_file_atomic, so a reader sees either the old file or
// the whole new one, never a prefix, even after SIGKILL or a power cut.
#pragma once

#include <string>
#include <string_view>

namespace shoal {

// Writes `bytes` to a temporary name beside `path` (`path.tmp.<pid>`), fsyncs it, renames it
// over `path` and fsyncs the folder so the rename itself is durable. On failure the temporary
// file is removed and a shoal::Error names the path and the system's reason.
void write_file_atomic(const std::string& path, std::string_view bytes);

// The temporary name write_file_atomic uses for `path` in this process (tests look for leftovers).
std::string temp_path_for(const std::string& path);

}  // namespace shoal
