// Step folders set aside by resumes: their names, how they are found among a checkpoint
// folder's other entries, and their order (newest first).
#include "checkpoint/interrupted_steps.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <filesystem>
#include <fstream>

#include "common/test_support.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Makes folder `name` under `dir` holding one file of `bytes` bytes, written `age` seconds ago.
void MakeFolder(const TempDir& dir, const std::string& name, size_t bytes, int age) {
  fs::create_directories(dir / name + "/loader");
  const std::string file = dir / name + "/loader/rank-00000-of-00001.ckpt";
  std::ofstream(file) << std::string(bytes, 'x');
  struct timeval now {};
  gettimeofday(&now, nullptr);
  const struct timeval then[2] = {{now.tv_sec - age, 0}, {now.tv_sec - age, 0}};
  for (const std::string& path : {file, dir / name + "/loader", dir / name}) {
    ASSERT_EQ(utimes(path.c_str(), then), 0) << path;
  }
}

TEST(InterruptedSteps, NameTakesTheFirstFreeSuffix) {
  TempDir dir;
  EXPECT_EQ(InterruptedStepName(dir / "step-8"), dir / "step-8.interrupted");
  fs::create_directory(dir / "step-8.interrupted");
  EXPECT_EQ(InterruptedStepName(dir / "step-8"), dir / "step-8.interrupted-1");
  fs::create_directory(dir / "step-8.interrupted-1");
  EXPECT_EQ(InterruptedStepName(dir / "step-8"), dir / "step-8.interrupted-2");
}

TEST(InterruptedSteps, ListsOnlySetAsideFoldersNewestFirst) {
  TempDir dir;
  MakeFolder(dir, "step-8.interrupted", 10, 300);
  MakeFolder(dir, "step-12.interrupted", 20, 200);
  MakeFolder(dir, "step-8.interrupted-1", 30, 100);
  MakeFolder(dir, "step-4", 5, 0);                        // a step folder
  MakeFolder(dir, "step-4.interrupted-x", 5, 0);          // not a suffix a resume makes
  MakeFolder(dir, "step-.interrupted", 5, 0);             // no step number
  MakeFolder(dir, "step-9.interrupted.tmp", 5, 0);        // something else
  std::ofstream(dir / "step-5.interrupted") << "a file";  // not a folder
  const std::vector<InterruptedStep> steps = ListInterruptedSteps(dir.path());
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].path, dir / "step-8.interrupted-1");
  EXPECT_EQ(steps[0].bytes, 30u);
  EXPECT_EQ(steps[1].path, dir / "step-12.interrupted");
  EXPECT_EQ(steps[1].step, 12u);
  EXPECT_EQ(steps[2].path, dir / "step-8.interrupted");
  EXPECT_GT(steps[0].written_ns, steps[1].written_ns);
  EXPECT_GT(steps[1].written_ns, steps[2].written_ns);
  // Names only: by step, newest step first, nothing measured.
  const std::vector<InterruptedStep> names = ListInterruptedSteps(dir.path(), false);
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[0].step, 12u);
  EXPECT_EQ(names[0].bytes, 0u);
  RemoveInterruptedStep(steps[2]);
  EXPECT_FALSE(fs::exists(dir / "step-8.interrupted"));
  EXPECT_EQ(ListInterruptedSteps(dir.path()).size(), 2u);
}

TEST(InterruptedSteps, MissingFolderHoldsNone) {
  TempDir dir;
  EXPECT_TRUE(ListInterruptedSteps(dir / "none").empty());
}

}  // namespace
}  // namespace stoker
