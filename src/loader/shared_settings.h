// The settings of a Loader that every rank must give alike, and the checks that they do
// (mpi/agreement.h): the seed, the logical shards, seq_len, the BOS id, the boundary fields and
// the step folder to resume from; the corpus, compared by what each rank sees behind its path
// (shard/corpus_view.h), not by the path; and, once the corpus is read, the EOS id and the mixing
// weights or schedule, compared by what they resolve to (RequireSameResolvedSettings). Each shapes
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

#include "mixing/mix_schedule.h"
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

// Collective, once every rank has resolved the corpus's EOS id and the weight schedule (the
// ranks see one corpus: RequireSharedSettings). Settings are compared by meaning: `--eos-id 0`
// and a corpus whose eos_id is 0 agree, and so do weights in proportion to the datasets' tokens
// and none, weights scaled by a factor, or --weights X and --weights-schedule 0:X. A difference is
// refused (ConfigError on every rank), naming the EOS ids or the normalized schedules and their
// ranks. Weights are compared to 12 significant digits (0.7,0.3 and 7,3 normalize to doubles an
// ulp apart) and every rank then takes rank 0's `schedule`, so that all mix by the same numbers.
void RequireSameResolvedSettings(const mpi::Comm& comm, const CorpusTable& table, int64_t eos_id,
                                 MixSchedule* schedule);

// Rank 0 warns, once, when shards of `table` carry no content checksum.
void WarnOfShardsWithoutChecksum(const mpi::Comm& comm, const CorpusTable& table);

// Collective (Loader::SetWeights): refuses (ConfigError on every rank) a call whose weights or
// step differ between ranks, naming the step, the weights and their ranks.
void RequireSameWeights(const mpi::Comm& comm, uint64_t step,
                        const std::map<std::string, double>& weights);

}  // namespace stoker
