#include "cold_storage.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
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

}  // namespace stoker::bench
