// Progress, the command line's progress display: on a terminal it redraws a bar in place and
// ends the line when finished; elsewhere it logs plain lines; disabled it prints nothing; and
// ProgressOutput::Detect() takes a terminal on stderr or, as a rank under mpirun has it, on
// stdout only.
#include "cli/progress.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace stoker::cli {
namespace {

// A FILE* whose contents the test can read after closing it.
class MemoryStream {
 public:
  MemoryStream() : file_(open_memstream(&data_, &size_)) {}
  ~MemoryStream() {
    if (file_ != nullptr) std::fclose(file_);
    std::free(data_);
  }
  std::FILE* file() const { return file_; }
  std::string Close() {
    std::fclose(file_);
    file_ = nullptr;
    return std::string(data_, size_);
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  std::FILE* file_;
};

TEST(ProgressTest, TerminalGetsABarRedrawnInPlace) {
  MemoryStream terminal;
  ProgressOutput output{.terminal = terminal.file(), .interval = std::chrono::seconds(0)};
  {
    Progress progress("pack", 2'000'000, /*enabled=*/true, output);
    progress.Update(1'000'000);
    progress.Update(2'000'000);
    progress.Finish();
    progress.Update(2'000'000);  // after Finish: nothing more
  }
  const std::string text = terminal.Close();
  const std::string half = "\r[" + std::string(15, '#') + std::string(15, ' ') + "] pack:  50.0%";
  const std::string full = "\r[" + std::string(30, '#') + "] pack: 100.0% 2.0/2.0 MB";
  EXPECT_NE(text.find(half), std::string::npos) << text;
  EXPECT_NE(text.find(full), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\r'), 3) << text;  // two updates, one final
  EXPECT_EQ(text.back(), '\n') << "the final draw must end the line";
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
}

TEST(ProgressTest, ElsewhereLogsPlainLines) {
  std::vector<std::string> lines;
  ProgressOutput output{.log = [&](const std::string& line) { lines.push_back(line); },
                        .interval = std::chrono::seconds(0)};
  {
    Progress progress("pack", 4'000'000, /*enabled=*/true, output);
    progress.Update(1'000'000);
    progress.Update(3'000'000);
  }  // the destructor finishes: a log gets no final line
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("pack:  25.0% 1.0/4.0 MB, ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("pack:  75.0% 3.0/4.0 MB, ", 0), 0u) << lines[1];
  for (const auto& line : lines) {
    EXPECT_EQ(line.find_first_of("\r[#"), std::string::npos) << "no bar in a log: " << line;
  }
}

TEST(ProgressTest, DisabledOrNotDuePrintsNothing) {
  MemoryStream terminal;
  std::vector<std::string> lines;
  const auto log = [&](const std::string& line) { lines.push_back(line); };
  {
    Progress disabled("pack", 100, /*enabled=*/false,
                      {.terminal = terminal.file(), .interval = std::chrono::seconds(0)});
    disabled.Update(50);
    Progress disabled_log("pack", 100, false, {.log = log, .interval = std::chrono::seconds(0)});
    disabled_log.Update(50);
    // Enabled, but nothing is due within the hour: not even a final line (nothing was drawn).
    Progress slow("pack", 100, true,
                  {.terminal = terminal.file(), .interval = std::chrono::hours(1)});
    slow.Update(50);
    slow.Finish();
  }
  EXPECT_EQ(terminal.Close(), "");
  EXPECT_TRUE(lines.empty());
}

// Points file descriptor `fd` at `target` until destruction.
class Redirect {
 public:
  Redirect(int fd, int target) : fd_(fd), saved_(::dup(fd)) { ::dup2(target, fd); }
  ~Redirect() {
    ::dup2(saved_, fd_);
    ::close(saved_);
  }

 private:
  int fd_;
  int saved_;
};

TEST(ProgressTest, DetectFindsATerminalOnStderrOrStdout) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  const int tty = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(tty, 0);
  const int null = ::open("/dev/null", O_WRONLY);
  ASSERT_GE(null, 0);
  std::fflush(stdout);
  std::fflush(stderr);
  ProgressOutput on_stdout, on_stderr, on_neither;
  {  // a rank under mpirun: stderr a pipe, stdout a terminal
    Redirect out(STDOUT_FILENO, tty), err(STDERR_FILENO, null);
    on_stdout = ProgressOutput::Detect();
  }
  {
    Redirect out(STDOUT_FILENO, null), err(STDERR_FILENO, tty);
    on_stderr = ProgressOutput::Detect();
  }
  {
    Redirect out(STDOUT_FILENO, null), err(STDERR_FILENO, null);
    on_neither = ProgressOutput::Detect();
  }
  ::close(null);
  ::close(tty);
  ::close(master);
  EXPECT_EQ(on_stdout.terminal, stdout);
  EXPECT_EQ(on_stderr.terminal, stderr);
  EXPECT_EQ(on_neither.terminal, nullptr);
  EXPECT_LT(on_stdout.interval, std::chrono::seconds(1));   // a bar redraws often
  EXPECT_GE(on_neither.interval, std::chrono::seconds(1));  // a log does not
}

}  // namespace
}  // namespace stoker::cli
