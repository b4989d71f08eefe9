#include "shoal/core/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "shoal/core/error.h"

namespace shoal {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& file, int err) {
  throw Error(what, ErrorContext{.file = file,
                                 .expected = "a writable file in an existing folder",
                                 .actual = std::strerror(err)});
}

std::string folder_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

// "a folder", "a FIFO", ... for a file that is not a regular one.
const char* kind_of(mode_t mode) {
  if (S_ISREG(mode)) return "a file";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

std::string named(std::string_view what, const std::string& message) {
  return what.empty() ? message : std::string(what) + ": " + message;
}

// Syncs a folder, so that a rename in it is durable (best effort: some file systems refuse).
void sync_folder(const std::string& dir) {
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

// Writes `bytes` to a new file `path` and syncs it; errors name `shown`.
void write_synced(const std::string& path, std::string_view bytes, const std::string& shown) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create output file", shown, errno);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      fail("writing output failed", shown, err);
    }
    done += static_cast<size_t>(n);
  }
  const int ok = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (ok != 0) fail("fsync of output failed", shown, err);
}

}  // namespace

// `path.tmp.<pid>.<n>`: the pid keeps two processes, and n two threads of one process (Python),
// from sharing one temporary name.
std::string temp_path_for(const std::string& path) {
  static std::atomic<uint64_t> next{0};
  return fmt::format("{}.tmp.{}.{}", path, ::getpid(), next++);
}

void remove_stale_temps(const std::string& path) {
  const std::filesystem::path p = std::filesystem::path(path).lexically_normal();
  const std::string prefix = p.filename().string() + ".tmp.";
  DIR* dir = ::opendir(folder_of(path).c_str());
  if (dir == nullptr) return;
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    // <pid> or <pid>.<n>
    const std::string rest = name.substr(prefix.size());
    const std::string pid_text = rest.substr(0, rest.find('.'));
    const std::string n_text =
        rest.find('.') == std::string::npos ? "0" : rest.substr(rest.find('.') + 1);
    if (pid_text.empty() || pid_text.size() > 9 || n_text.empty() ||
        pid_text.find_first_not_of("0123456789") != std::string::npos ||
        n_text.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    // Only those of processes that are gone: another live run's file is its own business.
    if (pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) {
      std::error_code ec;
      std::filesystem::remove_all(p.parent_path() / name, ec);
    }
  }
  ::closedir(dir);
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw Error(
        "output path is not a regular file; it is left as it is",
        ErrorContext{.file = path, .expected = "a file path", .actual = kind_of(st.st_mode)});
  remove_stale_temps(path);
  const std::string tmp = temp_path_for(path);
  try {
    write_synced(tmp, bytes, path);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("could not move the finished output into place", path, err);
  }
  // The rename lives in the folder: sync it too (best effort; some file systems refuse).
  sync_folder(folder_of(path));
}

void check_input_file(const std::string& path, std::string_view what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    throw Error(
        named(what, "cannot open file"),
        ErrorContext{.file = path, .expected = "a readable file", .actual = std::strerror(err)});
  }
  if (!S_ISREG(st.st_mode))
    throw Error(
        named(what, "cannot read input"),
        ErrorContext{.file = path, .expected = "a regular file", .actual = kind_of(st.st_mode)});
  if (::access(path.c_str(), R_OK) != 0) {
    const int err = errno;
    throw Error(
        named(what, "cannot open file"),
        ErrorContext{.file = path, .expected = "a readable file", .actual = std::strerror(err)});
  }
}

std::string read_input_file(const std::string& path, std::string_view what) {
  check_input_file(path, what);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw Error(
        named(what, "cannot open file"),
        ErrorContext{.file = path, .expected = "a readable file", .actual = std::strerror(err)});
  }
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw Error(
          named(what, "read failed"),
          ErrorContext{.file = path, .expected = "a readable file", .actual = std::strerror(err)});
    }
    if (n == 0) break;
    bytes.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return bytes;
}

OutputLock::OutputLock(std::string lock_path, std::string what) : path_(std::move(lock_path)) {
  // Another process may remove the lock file between our open and flock: then we hold a lock on
  // a file nobody else can see, so check that the path still names what we locked, else retry.
  for (int attempt = 0; attempt < 100; ++attempt) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("cannot create the lock file", path_, errno);
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd_);
      fd_ = -1;
      if (err == EWOULDBLOCK)
        throw Error("another shoal run is writing this output; wait for it to finish (or stop it)",
                    ErrorContext{.file = what,
                                 .expected = "one run per output",
                                 .actual = fmt::format("'{}' is locked", path_)});
      fail("cannot lock the output", path_, err);
    }
    struct stat held {
    }, now{};
    if (::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &now) == 0 && held.st_dev == now.st_dev &&
        held.st_ino == now.st_ino)
      return;
    ::close(fd_);
    fd_ = -1;
  }
  fail("cannot lock the output", path_, EAGAIN);
}

OutputLock::~OutputLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still held: a waiter that opened it retries on a new file
  ::close(fd_);
}

// --- outputs checked against the call's inputs ---------------------------------------------

namespace {

namespace fs = std::filesystem;

// The path with symbolic links and `.`/`..` resolved as far as it exists (the rest as written),
// without a trailing separator: two spellings of one place compare equal.
fs::path resolved(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path), ec);
  if (ec) p = fs::absolute(path).lexically_normal();
  if (!p.has_filename() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
  return p;
}

// Whether `inner` lies strictly below `outer`.
bool strictly_inside(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i)
    if (i == inner.end() || *i != *o) return false;
  return i != inner.end();
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  return resolved(a) == resolved(b);
}

[[noreturn]] void refuse(const std::string& path, std::string_view what, const std::string& message,
                         const std::string& expected, const std::string& actual) {
  throw Error(
      message,
      ErrorContext{
          .file = path, .field = std::string(what), .expected = expected, .actual = actual});
}

// Refuses `path` when it is, holds or lies inside one of `inputs`.
void check_against_inputs(const std::string& path, const std::vector<std::string>& inputs,
                          std::string_view what) {
  const fs::path out = resolved(path);
  for (const std::string& in : inputs) {
    if (in.empty()) continue;
    const fs::path p = resolved(in);
    const char* message = "the output would replace an input of the run";
    const char* expected = nullptr;
    const char* how = nullptr;
    if (same_file(path, in)) {
      expected = "a path that is none of the inputs";
      how = "the same file as input '{}'";
    } else if (strictly_inside(out, p)) {
      message = "the output would be written inside an input of the run";
      expected = "a path outside the input folders";
      how = "a path inside input '{}'";
    } else if (strictly_inside(p, out)) {
      message = "the output folder holds an input of the run";
      expected = "a folder that holds none of the inputs";
      how = "a folder holding input '{}'";
    }
    if (how != nullptr) refuse(path, what, message, expected, fmt::format(fmt::runtime(how), in));
  }
}

void check_parent_writable(const std::string& path, std::string_view what) {
  const std::string dir = folder_of(fs::path(path).lexically_normal().string());
  struct stat ds {};
  if (::stat(dir.c_str(), &ds) != 0 || !S_ISDIR(ds.st_mode))
    refuse(path, what, "the output's folder does not exist", "a path in an existing folder",
           fmt::format("no folder '{}'", dir));
  if (::access(dir.c_str(), W_OK) != 0)
    refuse(path, what, "the output's folder is not writable", "a writable folder",
           std::strerror(errno));
}

// Empty when `dir` (an existing folder) holds nothing but an earlier save of kind `format`: its
// manifest model.json and the files that lists. Else what else it holds.
std::string foreign_contents(const std::string& dir, std::string_view format) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  if (names.empty()) return {};
  std::sort(names.begin(), names.end());
  const std::string manifest = (fs::path(dir) / "model.json").string();
  if (std::find(names.begin(), names.end(), "model.json") == names.end())
    return fmt::format("files and no model.json: {}", fmt::join(names, ", "));
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(read_input_file(manifest));
  } catch (const std::exception&) {
    return "a model.json that is not a save's manifest";
  }
  if (!meta.is_object() || !meta.contains("format") || !meta["format"].is_string())
    return "a model.json without a format";
  if (meta["format"].get<std::string>() != format)
    return fmt::format("a save of kind {}", meta["format"].get<std::string>());
  std::vector<std::string> other;
  const nlohmann::json listed = meta.value("files", nlohmann::json::object());
  for (const std::string& n : names) {
    const bool ours = n == "model.json" || (listed.is_object() && listed.contains(n));
    if (!ours || !fs::is_regular_file(fs::symlink_status(fs::path(dir) / n))) other.push_back(n);
  }
  if (other.empty()) return {};
  return fmt::format("files its save did not write: {}", fmt::join(other, ", "));
}

// A folder that is `.`, `..`, the current directory or one above it is never replaced.
void check_not_cwd(const std::string& path, std::string_view what) {
  const std::string last = fs::path(path).lexically_normal().filename().string();
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  const fs::path p = resolved(path);
  if (last == "." || last == ".." || p == p.root_path() ||
      (!ec && (p == cwd || strictly_inside(cwd, p))))
    refuse(path, what, "the current directory and the folders above it are never replaced",
           "a folder of its own, e.g. model_dir", "the current directory or one above it");
}

// Moves the finished folder `tmp` to `target`; an earlier `target` ends at `tmp`. One atomic
// exchange where the file system has it (Linux ≥ 3.15: ext4, xfs, btrfs, tmpfs); else two
// renames, with `target` missing for a moment but never a mix.
void swap_in(const std::string& tmp, const std::string& target, const std::string& shown) {
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) == 0) return;
  int err = errno;
  if (err == EEXIST || err == ENOTEMPTY) {
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) return;
    err = errno;
  }
  if (err != EINVAL && err != ENOSYS)
    fail("could not move the finished save into place", shown, err);
  const std::string old = temp_path_for(target);
  const bool had = ::rename(target.c_str(), old.c_str()) == 0;
  if (!had && errno != ENOENT) fail("could not move the earlier save aside", shown, errno);
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    err = errno;
    if (had) ::rename(old.c_str(), target.c_str());
    fail("could not move the finished save into place", shown, err);
  }
  if (had) ::rename(old.c_str(), tmp.c_str());
}

}  // namespace

void check_output_path(const std::string& path, const std::vector<std::string>& inputs,
                       std::string_view what) {
  SHOAL_CHECK(!path.empty(), "{}: an output path is required", what);
  check_parent_writable(path, what);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    refuse(path, what, "output path is not a regular file; it is left as it is", "a file path",
           kind_of(st.st_mode));
  check_against_inputs(path, inputs, what);
}

void check_save_folder(const std::string& path, std::string_view format,
                       const std::vector<std::string>& inputs, std::string_view what) {
  SHOAL_CHECK(!path.empty(), "{}: a folder path is required", what);
  check_not_cwd(path, what);
  check_parent_writable(path, what);
  check_against_inputs(path, inputs, what);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;  // a new folder
  const std::string expected =
      fmt::format("a new folder, an empty one or an earlier {} save", format);
  if (!S_ISDIR(st.st_mode))
    refuse(path, what, "the save folder's path holds something else; it is left as it is", expected,
           S_ISLNK(st.st_mode) ? "a symbolic link" : kind_of(st.st_mode));
  const std::string foreign = foreign_contents(path, format);
  if (!foreign.empty())
    refuse(path, what, "the folder holds what no earlier save wrote; it is left as it is", expected,
           foreign);
}

void write_save_folder(const std::string& path, std::string_view format, const FolderFiles& files,
                       std::string_view what) {
  check_save_folder(path, format, {}, what);
  const std::string target = fs::path(path).lexically_normal().string();
  remove_stale_temps(target);
  const std::string tmp = temp_path_for(target);
  if (::mkdir(tmp.c_str(), 0755) != 0) fail("cannot create a temporary folder", path, errno);
  try {
    for (const auto& [name, bytes] : files) {
      SHOAL_CHECK(
          !name.empty() && name.find('/') == std::string::npos && name != "." && name != "..",
          "{}: '{}' is not a file name", what, name);
      write_synced((fs::path(tmp) / name).string(), bytes, path + "/" + name);
    }
    sync_folder(tmp);
    // An atomic exchange: `path` is the old save or the new one at every instant. The old one
    // lands at `tmp` and is checked again, so a folder filled since the first check goes back.
    swap_in(tmp, target, path);
    struct stat st {};
    if (::lstat(tmp.c_str(), &st) == 0 &&
        (!S_ISDIR(st.st_mode) || !foreign_contents(tmp, format).empty())) {
      swap_in(tmp, target, path);
      check_save_folder(path, format, {}, what);  // says why
      fail("the folder changed while saving", path, EAGAIN);
    }
    std::error_code ec;
    fs::remove_all(tmp, ec);
    sync_folder(folder_of(target));
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
}

OutputPlan::OutputPlan(std::vector<std::string> inputs) : inputs_(std::move(inputs)) {}

void OutputPlan::distinct(const std::string& path, std::string_view what, bool is_folder) {
  const fs::path p = resolved(path);
  for (const auto& [other, flag] : outputs_) {
    const fs::path o = other;
    if (p == o || strictly_inside(p, o) || (is_folder && strictly_inside(o, p)))
      refuse(path, what, "two outputs of the run would be one file", "a path of its own",
             fmt::format("the same place as {} '{}'", flag, other));
  }
  outputs_.emplace_back(p.string(), std::string(what));
}

OutputPlan& OutputPlan::file(const std::string& path, std::string_view what) {
  if (path.empty()) return *this;
  // A file in a folder of this plan that is yet to be made cannot be an input or a folder:
  // only its clash with the other outputs is left to check.
  const std::string dir = resolved(folder_of(path)).string();
  const bool in_new_folder =
      !fs::exists(dir) && std::find(folders_.begin(), folders_.end(), dir) != folders_.end();
  if (!in_new_folder) check_output_path(path, inputs_, what);
  distinct(path, what, false);
  return *this;
}

OutputPlan& OutputPlan::save_folder(const std::string& path, std::string_view format,
                                    std::string_view what) {
  if (path.empty()) return *this;
  check_save_folder(path, format, inputs_, what);
  distinct(path, what, true);
  return *this;
}

OutputPlan& OutputPlan::folder(const std::string& path, std::string_view what) {
  if (path.empty()) return *this;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    refuse(path, what, "the output folder's path holds a file; it is left as it is",
           "a folder (made when missing)", kind_of(st.st_mode));
  // The folder, or the nearest one above it that exists (the rest is made), must be writable.
  fs::path near = fs::absolute(path).lexically_normal();
  while (!fs::exists(near) && near.has_parent_path() && near != near.parent_path())
    near = near.parent_path();
  if (!fs::is_directory(near))
    refuse(path, what, "the output folder cannot be made", "a folder (made when missing)",
           fmt::format("'{}' is not a folder", near.string()));
  if (::access(near.c_str(), W_OK) != 0)
    refuse(path, what, "the output folder is not writable", "a writable folder",
           fmt::format("'{}': {}", near.string(), std::strerror(errno)));
  const fs::path out = resolved(path);
  folders_.push_back(out.string());
  for (const std::string& in : inputs_)
    if (!in.empty() && fs::is_directory(in) &&
        (out == resolved(in) || strictly_inside(out, resolved(in))))
      refuse(path, what, "the output would be written into an input folder of the run",
             "a folder outside the inputs", fmt::format("inside input '{}'", in));
  return *this;
}

}  // namespace shoal
