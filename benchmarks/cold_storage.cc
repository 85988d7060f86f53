#include "cold_storage.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/magic.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/check.h"
#include "os/unique_fd.h"
#include "stoker/error.h"

namespace stoker::bench {

std::string DropPageCache() {
  ::sync();
  const UniqueFd fd(::open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC));
  if (fd && ::write(fd.get(), "3", 1) == 1) return "";
  return fmt::format(
      "cannot empty the page cache (writing 3 to /proc/sys/vm/drop_caches: {}{}), so no figure "
      "would be cold: run as root",
      std::strerror(errno), ::geteuid() == 0 ? "" : "; not root");
}

bool InMemory(const std::string& dir) {
  std::error_code ignored;  // a folder that cannot be made fails later, where it is written
  std::filesystem::create_directories(dir, ignored);
  struct statfs fs {};
  return ::statfs(dir.c_str(), &fs) == 0 &&
         (fs.f_type == TMPFS_MAGIC || fs.f_type == static_cast<decltype(fs.f_type)>(RAMFS_MAGIC));
}

ReadAhead FindReadAhead(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  std::error_code error;
  std::filesystem::path device = std::filesystem::canonical(
      fmt::format("/sys/dev/block/{}:{}", major(st.st_dev), minor(st.st_dev)), error);
  if (error) return {};
  if (std::filesystem::exists(device / "partition", error)) device = device.parent_path();
  std::ifstream in(device / "queue" / "read_ahead_kb");
  ReadAhead found{.device = device.filename().string()};
  if (!(in >> found.kb)) found.kb = "unknown";
  return found;
}

CommandResult RunCommand(const std::vector<std::string>& argv) {
  int ends[2];
  STOKER_CHECK(::pipe2(ends, O_CLOEXEC) == 0, IoError, "pipe2: {}", std::strerror(errno));
  const UniqueFd read_end(ends[0]);
  UniqueFd write_end(ends[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDOUT_FILENO);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int error = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  write_end.Reset();  // the child holds the only write end now: end of file when it exits
  CommandResult result;
  if (error != 0) return result;
  char buffer[1 << 16];
  for (ssize_t got; (got = ::read(read_end.get(), buffer, sizeof buffer)) != 0;) {
    if (got > 0) result.out.append(buffer, got);
    if (got < 0 && errno != EINTR) break;
  }
  int status = -1;  // not an exit, should waitpid fail
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.status = WEXITSTATUS(status);
  return result;
}

}  // namespace stoker::bench
