#include "shoal/core/file_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <thread>
#include <vector>

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
  // What a run killed mid-write leaves (a pid no process has).
  const std::string stale = path + ".tmp.999999999.0";
  { std::ofstream(stale) << "half"; }
  EXPECT_EQ(read_all(path), "whole\n");
  write_file_atomic(path, "new\n");  // the next run removes the stale temporary
  EXPECT_EQ(read_all(path), "new\n");
  EXPECT_FALSE(fs::exists(stale));
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

// --- save folders and the outputs of one call ------------------------------------------------

constexpr const char* kKind = "shoal.test";

FolderFiles save_of(const std::string& payload) {
  const std::string meta =
      fmt::format(R"({{"format": "{}", "files": {{"a.bin": {{}}, "b.bin": {{}}}}}})", kKind);
  return {{"a.bin", payload}, {"b.bin", payload + payload}, {"model.json", meta}};
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

// Every entry of `dir`, sorted: what a test expects to find left.
std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(SaveFolder, WritesANewFolderAndReplacesAnEarlierSaveOfItsKind) {
  const fs::path dir = scratch("saves");
  fs::create_directories(dir);
  const std::string model = (dir / "model").string();
  write_save_folder(model, kKind, save_of("one"), "--save");
  write_save_folder(model, kKind, save_of("two"), "--save");
  EXPECT_EQ(read_all(model + "/a.bin"), "two");
  EXPECT_EQ(entries(model), (std::vector<std::string>{"a.bin", "b.bin", "model.json"}));
  // Nothing beside it: no temporary, no hidden earlier copy.
  EXPECT_EQ(entries(dir), std::vector<std::string>{"model"});
  fs::remove_all(dir);
}

TEST(SaveFolder, RefusesAFolderHoldingOtherFilesAndLeavesThemAlone) {
  const fs::path dir = scratch("others");
  fs::create_directories(dir);
  { std::ofstream(dir / "notes.txt") << "mine"; }
  const std::string message =
      error_of([&] { write_save_folder(dir.string(), kKind, save_of("x"), "--save"); });
  EXPECT_NE(message.find("holds what no earlier save wrote"), std::string::npos) << message;
  EXPECT_NE(message.find("notes.txt"), std::string::npos) << message;
  EXPECT_EQ(entries(dir), std::vector<std::string>{"notes.txt"});
  // An earlier save with a file it did not list, or a save of another kind: refused too.
  write_save_folder((dir / "m").string(), kKind, save_of("x"), "--save");
  { std::ofstream(dir / "m" / "extra.csv") << "mine"; }
  EXPECT_NE(error_of([&] { check_save_folder((dir / "m").string(), kKind, {}, "--save"); }), "");
  EXPECT_NE(error_of([&] { check_save_folder((dir / "m").string(), "shoal.other", {}, "p"); }), "");
  EXPECT_TRUE(fs::exists(dir / "m" / "extra.csv"));
  fs::remove_all(dir);
}

TEST(SaveFolder, NeverReplacesTheCurrentDirectoryOrOneAboveIt) {
  const fs::path dir = scratch("cwd");
  fs::create_directories(dir / "inner");
  const fs::path was = fs::current_path();
  fs::current_path(dir / "inner");
  for (const char* p : {".", "..", "./", "../inner", ""}) {
    const std::string message = error_of([&] { write_save_folder(p, kKind, save_of("x"), "p"); });
    EXPECT_NE(message, "") << p;
  }
  fs::current_path(was);
  EXPECT_EQ(entries(dir), std::vector<std::string>{"inner"});
  EXPECT_TRUE(entries(dir / "inner").empty());
  fs::remove_all(dir);
}

TEST(SaveFolder, AStaleTemporaryFolderIsRemovedAndAFileIsNotReplaced) {
  const fs::path dir = scratch("stale");
  fs::create_directories(dir / "model.tmp.999999999.3");
  { std::ofstream(dir / "model.tmp.999999999.3" / "a.bin") << "half"; }
  { std::ofstream(dir / "file") << "mine"; }
  write_save_folder((dir / "model").string(), kKind, save_of("x"), "p");
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"file", "model"}));
  EXPECT_NE(error_of([&] { write_save_folder((dir / "file").string(), kKind, save_of("x"), "p"); }),
            "");
  EXPECT_EQ(read_all((dir / "file").string()), "mine");
  fs::remove_all(dir);
}

// Two writers of one save folder at once: each swap is atomic, so the folder is one whole save.
TEST(SaveFolder, TwoWritersAtOnceLeaveOneWholeSave) {
  const fs::path dir = scratch("race");
  fs::create_directories(dir);
  const std::string model = (dir / "model").string();
  std::atomic<int> refused{0};
  auto writer = [&](const std::string& payload) {
    for (int i = 0; i < 20; ++i) try {
        write_save_folder(model, kKind, save_of(payload), "p");
      } catch (const Error&) {
        ++refused;  // the other writer's swap seen mid-check: refused, nothing lost
      }
  };
  std::thread a(writer, "aa"), b(writer, "bbb");
  a.join();
  b.join();
  const std::string first = read_all(model + "/a.bin");
  EXPECT_TRUE(first == "aa" || first == "bbb") << first;
  EXPECT_EQ(read_all(model + "/b.bin"), first + first);
  EXPECT_EQ(entries(dir), std::vector<std::string>{"model"});
  fs::remove_all(dir);
}

TEST(OutputPlan, RefusesAnOutputThatIsHoldsOrIsInsideAnInput) {
  const fs::path dir = scratch("plan");
  fs::create_directories(dir / "model");
  { std::ofstream(dir / "train.csv") << "user,item\n1,2\n"; }
  { std::ofstream(dir / "model" / "model.json") << "{}"; }
  const std::string train = (dir / "train.csv").string(), model = (dir / "model").string();
  const std::vector<std::string> inputs = {train, model};
  // The same file by another spelling, a file inside the model folder (new or not), a save
  // folder holding an input.
  for (const std::string& out :
       {(dir / "." / "train.csv").string(), model + "/model.json", model + "/new.csv"})
    EXPECT_NE(error_of([&] { OutputPlan(inputs).file(out, "--out"); }), "") << out;
  EXPECT_NE(error_of([&] { OutputPlan(inputs).save_folder(dir.string(), kKind, "--save"); }), "");
  EXPECT_NE(error_of([&] { OutputPlan(inputs).save_folder(model, kKind, "--save"); }), "");
  const std::string message = error_of([&] {
    OutputPlan(inputs)
        .file((dir / "a.csv").string(), "--train-out")
        .file((dir / "a.csv").string(), "--test-out");
  });
  EXPECT_NE(message.find("the same place as --train-out"), std::string::npos) << message;
  EXPECT_EQ(error_of([&] { OutputPlan(inputs).file((dir / "ok.csv").string(), "--out"); }), "");
  EXPECT_EQ(read_all(train), "user,item\n1,2\n");
  fs::remove_all(dir);
}

// A read-only folder is refused before any work (skipped where this user may write anyway: root).
TEST(OutputPlan, RefusesAReadOnlyFolder) {
  const fs::path dir = scratch("readonly");
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
  // Root writes there anyway: a read-only file system (/proc/sys) stands in.
  fs::path place = dir;
  if (::access(dir.c_str(), W_OK) == 0) {
    if (::access("/proc/sys", F_OK) != 0 || ::access("/proc/sys", W_OK) == 0) {
      fs::permissions(dir, fs::perms::owner_all);
      fs::remove_all(dir);
      GTEST_SKIP() << "this user writes into read-only folders (root)";
    }
    place = "/proc/sys";
  }
  EXPECT_NE(error_of([&] { OutputPlan({}).file((place / "x.csv").string(), "--out"); }), "");
  EXPECT_NE(error_of([&] { OutputPlan({}).folder((place / "out").string(), "--profile-out"); }),
            "");
  EXPECT_NE(error_of([&] { write_save_folder((place / "m").string(), kKind, save_of("x"), "p"); }),
            "");
  fs::permissions(dir, fs::perms::owner_all);
  EXPECT_TRUE(entries(dir).empty());
  fs::remove_all(dir);
}

}  // namespace file_io_test
}  // namespace shoal
