#include "shoal/core/file_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "shoal/core/error.h"

namespace shoal {
namespace file_io_test {

namespace fs = std::filesystem;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("shoal_file_io_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

TEST(WriteFileAtomic, ReplacesContentsAndLeavesNoTemporary) {
  const std::string path = scratch("atomic.txt").string();
  write_file_atomic(path, "first\n");
  write_file_atomic(path, std::string("second\0binary\n", 14));
  EXPECT_EQ(read_all(path), std::string("second\0binary\n", 14));
  for (const auto& e : fs::directory_iterator(fs::path(path).parent_path()))
    EXPECT_EQ(e.path().filename().string().find("atomic.txt.tmp"), std::string::npos) << e.path();
  fs::remove_all(fs::path(path).parent_path());
}

// A crash before the rename leaves the old file whole: only the temporary name is ever partial.
TEST(WriteFileAtomic, AStaleTemporaryDoesNotTouchTheTarget) {
  const std::string path = scratch("keep.txt").string();
  write_file_atomic(path, "whole\n");
  { std::ofstream(temp_path_for(path)) << "half"; }  // what a kill mid-write leaves
  EXPECT_EQ(read_all(path), "whole\n");
  write_file_atomic(path, "new\n");  // the next run overwrites the stale temporary
  EXPECT_EQ(read_all(path), "new\n");
  EXPECT_FALSE(fs::exists(temp_path_for(path)));
  fs::remove_all(fs::path(path).parent_path());
}

TEST(WriteFileAtomic, AMissingFolderIsAnErrorNamingTheFile) {
  try {
    write_file_atomic("/nonexistent-dir/x.txt", "x");
    FAIL() << "no error";
  } catch (const Error& e) {
    // The user's path, not the temporary one beside it.
    EXPECT_EQ(std::string(e.what()),
              "/nonexistent-dir/x.txt: cannot create output file (expected a writable file in an "
              "existing folder, got No such file or directory)");
  }
  EXPECT_FALSE(fs::exists("/nonexistent-dir/x.txt"));
}

}  // namespace file_io_test
}  // namespace shoal
