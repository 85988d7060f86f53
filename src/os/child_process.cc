#include "os/child_process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/check.h"
#include "os/unique_fd.h"

extern char** environ;

namespace stoker {

namespace {

// Waits for `pid` through interruptions; the shell's way of saying how it ended.
int WaitFor(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 128;
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

// Reads `fd` to its end.
std::string ReadAll(int fd) {
  std::string out;
  char buffer[4096];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      out.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return out;
    }
  }
}

}  // namespace

ChildResult RunChild(const std::vector<std::string>& argv) {
  STOKER_ASSERT(!argv.empty(), "RunChild needs a program");
  int fds[2];
  STOKER_CHECK(::pipe2(fds, O_CLOEXEC) == 0, IoError, "cannot run {}: pipe: {}", argv[0],
               std::strerror(errno));
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDOUT_FILENO);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  STOKER_CHECK(rc == 0, IoError, "cannot run {}: {}", argv[0], std::strerror(rc));
  write_end.Reset();  // the child holds the only writing end: its exit ends the read
  ChildResult result;
  result.output = ReadAll(read_end.get());
  result.status = WaitFor(pid);
  return result;
}

}  // namespace stoker
