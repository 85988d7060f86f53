// bench_loader --mode cold: reading a corpus that is not in the page cache, side by side: the
// device's sequential rate, fio's random O_DIRECT reads at queue depth 1 and 32, a Megatron-style
// mmap reader and stoker's Loader at 1 rank and at every rank (the top of loader_bench.cc says
// what each measures). Needs root (it empties the page cache before every measurement) and fio.
#pragma once

#include "loader_bench.h"
#include "mpi/comm.h"

namespace stoker::bench {

// Collective over `world`. Rank 0 prints the table. Returns the exit code: 0, or 2 after rank 0
// said why the figures cannot be cold here (not root, the page cache not droppable, the corpus
// folder on tmpfs, fio missing) before anything was measured. ConfigError when the corpus is
// less than 10 times what one measurement reads.
int Cold(const mpi::Comm& world, const Options& o);

}  // namespace stoker::bench
