// What measuring cold storage (bench_loader --mode cold) asks of the system: emptying the page
// cache, whether a folder lives in memory, the read-ahead of the block device holding a file
// (fio runs through os/child_process.h). Linux only; thread safe (no shared state).
#pragma once

#include <string>
#include <vector>

namespace stoker::bench {

// sync(2), then 3 into /proc/sys/vm/drop_caches (clean pages, dentries and inodes go): needs
// root. Returns why it failed ("not root", the errno), or "" when the cache was emptied.
std::string DropPageCache();

// True when the folder `dir` (made here if missing) is on tmpfs or ramfs, whose files are memory
// that no drop empties.
bool InMemory(const std::string& dir);

// The block device holding `path` and its read-ahead in KiB, from /sys/block/<dev>/queue/
// read_ahead_kb: st_dev names the device in /sys/dev/block (a partition's queue is its disk's).
// "unknown" where not found (overlay and network file systems have no device of their own).
struct ReadAhead {
  std::string device = "unknown";
  std::string kb = "unknown";
};
ReadAhead FindReadAhead(const std::string& path);

}  // namespace stoker::bench
