// How much memory this process may use, for checking sizes before anything is allocated: a
// configuration whose buffers cannot fit is refused with the figures, instead of ending in
// std::bad_alloc (or the kernel's OOM killer) after the job has started.
//
// Thread safe (reads files and limits, keeps no state).
#pragma once

#include <cstdint>
#include <string>

namespace stoker {

// The least of: the machine's physical memory; the limit of this process's memory cgroup
// (cgroup v2 memory.max, or v1 memory.limit_in_bytes: where Slurm's task/cgroup plugin puts a
// job's --mem); the address-space and data-segment limits (ulimit -v, ulimit -d).
uint64_t UsableMemoryBytes();

// "512 B", "3.2 MiB", "48.0 GiB".
std::string FormatBytes(double bytes);

}  // namespace stoker
