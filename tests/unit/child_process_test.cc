// Running another program (os/child_process.h): what `stoker job start` does with a trainer's
// --check. Exit codes and signals as a shell reports them, stdout read whole, stderr left alone.
#include "os/child_process.h"

#include <gtest/gtest.h>

#include <string>

#include "stoker/error.h"

namespace stoker {
namespace {

TEST(ChildProcess, ReadsStdoutWholeAndGivesTheExitCode) {
  // More than a pipe holds (64 KiB), so the parent must read while the child writes.
  const ChildResult r = RunChild(
      {"/bin/sh", "-c", "i=0; while [ $i -lt 20000 ]; do echo line$i; i=$((i+1)); done; exit 3"});
  EXPECT_EQ(r.status, 3);
  EXPECT_TRUE(r.output.starts_with("line0\nline1\n"));
  EXPECT_TRUE(r.output.ends_with("line19999\n"));
  EXPECT_EQ(r.output.size(), 188890u);
}

TEST(ChildProcess, StderrIsNotCaptured) {
  const ChildResult r = RunChild({"/bin/sh", "-c", "echo out; echo err >&2"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.output, "out\n");
}

TEST(ChildProcess, ASignalIsOneHundredTwentyEightPlusItsNumber) {
  const ChildResult r = RunChild({"/bin/sh", "-c", "kill -KILL $$"});
  EXPECT_EQ(r.status, 128 + 9);
}

TEST(ChildProcess, APathlessNameIsLookedUpInPath) {
  const ChildResult r = RunChild({"sh", "-c", "echo found"});
  EXPECT_EQ(r.output, "found\n");
}

TEST(ChildProcess, AProgramThatCannotStartIsAnIoErrorNamingIt) {
  try {
    RunChild({"/nonexistent/trainer", "--check"});
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/trainer"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stoker
