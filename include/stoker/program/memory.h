// How much memory this process may use, for checking sizes before anything is allocated: a
// configuration whose buffers cannot fit is refused with the figures, instead of ending in
// std::bad_alloc (or the kernel's OOM killer) after the job has started.
//
// Thread safe (reads files and limits, keeps no state). Part of stoker::program's headers,
// implemented in src/base (the library checks its own buffers with it).
#pragma once

#include <cstdint>
#include <string>

namespace stoker {

// The least of: the machine's physical memory; the limits of this process's memory cgroup and of
// every cgroup above it (cgroup v2 memory.max, or v1 memory.limit_in_bytes: Slurm's task/cgroup
// plugin puts a job's --mem on the job's or step's cgroup, above the task's); the address-space
// and data-segment limits (ulimit -v, ulimit -d).
uint64_t UsableMemoryBytes();

// What one rank's buffers may take by default: half of UsableMemoryBytes(), shared by the
// `ranks_on_node` processes of the node (the cgroup and RAM are the node's), and the words that
// say where the figure comes from, for error messages.
struct MemoryBudget {
  uint64_t bytes = 0;
  std::string why;
};
MemoryBudget DefaultMemoryBudget(uint64_t ranks_on_node);

// "512 B", "3.2 MiB", "48.0 GiB".
std::string FormatBytes(double bytes);

}  // namespace stoker
