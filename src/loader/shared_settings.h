// The settings of a Loader that every rank must give alike, and the checks that they do
// (mpi/agreement.h): the seed, the logical shards, seq_len, the EOS and BOS ids, the mixing
// weights or schedule, the boundary fields and the step folder to resume from; and the corpus,
// compared by what each rank sees behind its path (shard/corpus_view.h), not by the path. Each shapes
// the global order or the state that the ranks share out between them: with a seed of its own
// (`seed = base + rank`, a habit of per-rank random streams) a rank walks another permutation,
// and documents are served twice or never, in silence. How a rank reads (prefetch, io_depth,
// read_ahead_bytes, memory, engines) and batch_size are its own: they change when a rank's
// documents arrive, not which ones it owns.
// Collective calls, on the trainer's thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "mpi/agreement.h"
#include "mpi/comm.h"
#include "stoker/corpus.h"
#include "stoker/loader.h"

namespace stoker {

// The shared settings of `config`, by the names of LoaderConfig's fields (the Python Loader's
// arguments), as the user would write them.
std::vector<mpi::Setting> SharedSettings(const LoaderConfig& config);

// Collective, before the corpus is read: refuses (ConfigError on every rank) shared settings that
// differ between ranks, naming each setting, its values and their ranks; then a corpus folder
// that some rank cannot see, naming the rank, its host and the folder; then ranks that see other
// files behind their corpus paths (RequireSameCorpusView).
void RequireSharedSettings(const mpi::Comm& comm, const LoaderConfig& config);

// Rank 0 warns, once, when shards of `table` carry no content checksum.
void WarnOfShardsWithoutChecksum(const mpi::Comm& comm, const CorpusTable& table);

// Collective (Loader::SetWeights): refuses (ConfigError on every rank) a call whose weights or
// step differ between ranks, naming the step, the weights and their ranks.
void RequireSameWeights(const mpi::Comm& comm, uint64_t step,
                        const std::map<std::string, double>& weights);

}  // namespace stoker
