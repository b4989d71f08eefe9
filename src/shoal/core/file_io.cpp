#include "shoal/core/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

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
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

std::string named(std::string_view what, const std::string& message) {
  return what.empty() ? message : std::string(what) + ": " + message;
}

}  // namespace

std::string temp_path_for(const std::string& path) {
  // The pid keeps two processes writing the same output from sharing one temporary file.
  return path + ".tmp." + std::to_string(::getpid());
}

void remove_stale_temps(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string prefix = p.filename().string() + ".tmp.";
  DIR* dir = ::opendir(folder_of(path).c_str());
  if (dir == nullptr) return;
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string pid_text = name.substr(prefix.size());
    if (pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9)
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    // Only files of processes that are gone: another live run's file is its own business.
    if (pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH)
      ::unlink((p.parent_path() / name).c_str());
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
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create output file", path, errno);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail("writing output failed", path, err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail("fsync of output failed", path, err);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("could not move the finished output into place", path, err);
  }
  // The rename lives in the folder: sync it too (best effort; some file systems refuse).
  const int dfd = ::open(folder_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
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

void check_output_path(const std::string& path, const std::vector<std::string>& inputs,
                       std::string_view what) {
  const ErrorContext where{.file = path, .field = std::string(what)};
  auto refuse = [&](const std::string& message, const std::string& expected,
                    const std::string& actual) {
    ErrorContext c = where;
    c.expected = expected;
    c.actual = actual;
    throw Error(message, c);
  };
  SHOAL_CHECK(!path.empty(), "{}: an output path is required", what);
  const std::string dir = folder_of(path);
  struct stat ds {};
  if (::stat(dir.c_str(), &ds) != 0 || !S_ISDIR(ds.st_mode))
    refuse("the output's folder does not exist", "a path in an existing folder",
           fmt::format("no folder '{}'", dir));
  if (::access(dir.c_str(), W_OK) != 0)
    refuse("the output's folder is not writable", "a writable folder", std::strerror(errno));
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // a new file: nothing to clash with
  if (!S_ISREG(st.st_mode))
    refuse("output path is not a regular file; it is left as it is", "a file path",
           kind_of(st.st_mode));
  for (const std::string& in : inputs) {
    struct stat is {};
    if (in.empty() || ::stat(in.c_str(), &is) != 0) continue;
    if (is.st_dev == st.st_dev && is.st_ino == st.st_ino)
      refuse("the output would replace an input of the run", "a path that is none of the inputs",
             fmt::format("the same file as input '{}'", in));
  }
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

}  // namespace shoal
