#include "base/memory.h"

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

// The limit of the memory cgroup this process is in, from /proc/self/cgroup: "0::/path" (v2) or
// "N:memory:/path" (v1). Inside a container the path may not exist as named; the cgroup's root
// file is tried as well.
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
      for (const std::string base : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
        limit =
            std::min({limit, LimitIn(base + path + "/memory.max"), LimitIn(base + "/memory.max")});
      }
    } else if (controllers == "memory") {
      const std::string base = "/sys/fs/cgroup/memory";
      limit = std::min({limit, LimitIn(base + path + "/memory.limit_in_bytes"),
                        LimitIn(base + "/memory.limit_in_bytes")});
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
