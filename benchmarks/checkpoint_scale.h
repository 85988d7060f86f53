// bench_checkpoint's one-process modes: the pure parts of a large world, simulated rank by rank.
//
//   plan     [--world 16384] [--shards 16777216] [--dealt-docs 0] [--sample 16] [--steps 4]
//       Plans batches (8 rows of 4,097 tokens) on `sample` ranks spread over the world, at the
//       weights 0.7/0.2/0.1 of two walked datasets of 9e10 and 1e10 documents (~1,000 tokens
//       each: 1e14 tokens) and, with --dealt-docs N, a third of N documents dealt to the ranks.
//       Prints the planner's construction and the batches' times (median and max over ranks and
//       steps) and the rank file's bytes after the steps (median and max over ranks).
//   rescale  [--from 4096] [--to 3000] [--shards 65536] [--datasets 3] [--dealt 0] [--sample 8]
//       The pure redistribution of a simulated FROM-rank state to TO ranks (split, encode, decode,
//       assemble), every old rank and every new rank, holding only the encoded parts: the total
//       time, each rank's own (what it does in parallel with the others under MPI), the bytes each
//       old rank sends and each new rank receives, beside merely copying each old rank's cursors
//       (the floor). With --dealt 1 dataset 0 is dealt to the ranks (every old rank sends a part
//       to every new rank): every old rank is split, but only `sample` new ranks spread over the
//       world are assembled and counted.
#pragma once

#include <cstdint>

namespace stoker {

struct ScaleOptions {
  uint64_t world = 16384;           // plan: ranks
  uint64_t shards = 65536;          // logical shards
  uint64_t datasets = 3;            // rescale: datasets of the simulated state
  uint64_t dealt_docs = 0;          // plan: documents of a dealt third dataset (0: none)
  bool dealt = false;               // rescale: dataset 0 dealt
  uint64_t sample = 16;             // ranks sampled
  uint64_t steps = 4;               // plan: batches per sampled rank
  uint64_t from = 4096, to = 3000;  // rescale: the worlds
};

void PlanAtScale(const ScaleOptions& o);
void RescaleAtScale(const ScaleOptions& o);

}  // namespace stoker
