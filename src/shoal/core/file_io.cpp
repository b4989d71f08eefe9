#include "shoal/core/file_io.h"

#include <fcntl.h>
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

}  // namespace

std::string temp_path_for(const std::string& path) {
  // The pid keeps two processes writing the same output from sharing one temporary file.
  return path + ".tmp." + std::to_string(::getpid());
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  const std::string tmp = temp_path_for(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create output file", tmp, errno);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail("writing output failed", tmp, err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail("fsync of output failed", tmp, err);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("could not move the finished output into place", path, err);
  }
  // The rename lives in the folder: sync it too (best effort; some file systems refuse).
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace shoal
