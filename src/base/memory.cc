#include "stoker/program/memory.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace stoker {

namespace {

// The number in the first line of `path`, if it holds one ("max" and missing files do not).
uint64_t LimitIn(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
    return UINT64_MAX;
  }
  try {
    return std::stoull(text);
  } catch (...) {
    return UINT64_MAX;
  }
}

// The least limit in `file` of the cgroup folder base + path and of every folder above it, up to
// base itself.
uint64_t LeastLimitUp(const std::string& base, std::string path, const char* file) {
  uint64_t limit = UINT64_MAX;
  while (true) {
    limit = std::min(limit, LimitIn(base + path + "/" + file));
    if (path.empty()) return limit;
    path.erase(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/'));
  }
}

// The limit of the memory cgroups this process is in, from /proc/self/cgroup: "0::/path" (v2) or
// "N:memory:/path" (v1).
uint64_t CgroupLimit() {
  uint64_t limit = UINT64_MAX;
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (controllers.empty()) {
      for (const char* base : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
        limit = std::min(limit, LeastLimitUp(base, path, "memory.max"));
      }
    } else if (controllers == "memory") {
      limit = std::min(limit, LeastLimitUp("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes"));
    }
  }
  return limit;
}

uint64_t ResourceLimit(int resource) {
  rlimit limit{};
  if (::getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return static_cast<uint64_t>(limit.rlim_cur);
}

}  // namespace

uint64_t UsableMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  const uint64_t physical = pages > 0 && page > 0
                                ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
                                : UINT64_MAX;
  return std::min({physical, CgroupLimit(), ResourceLimit(RLIMIT_AS), ResourceLimit(RLIMIT_DATA)});
}

MemoryBudget DefaultMemoryBudget(uint64_t ranks_on_node) {
  const uint64_t usable = UsableMemoryBytes();
  const uint64_t ranks = std::max<uint64_t>(ranks_on_node, 1);
  const std::string whole = FormatBytes(static_cast<double>(usable));
  return {usable / 2 / ranks,
          ranks == 1 ? fmt::format("half of the {} this process may use: RAM, cgroup limit, "
                                   "ulimit -v",
                                   whole)
                     : fmt::format("half of the {} the processes of this node may use (RAM, "
                                   "cgroup limit, ulimit -v), shared by its {} ranks",
                                   whole, ranks)};
}

std::string FormatBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(units)) {
    bytes /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, units[unit]);
}

}  // namespace stoker
