// Settings that every rank of a communicator must give alike (a seed, the corpus, the weights a
// trainer sets): a rank that gives its own would shape an order or a state the others do not
// share, and the run would lose or repeat documents in silence. RequireAgreement compares them
// and refuses a difference on every rank with one message naming each setting that differs, its
// values and the ranks that gave each.
//
// Cost: one broadcast of rank 0's settings (a few hundred bytes) and one all-reduce of a flag
// per setting; only when something differs, one all-gather of every rank's settings to name
// them. Collective; not thread safe (one thread per Comm, as mpi::Comm).
#pragma once

#include <string>
#include <vector>

#include "mpi/comm.h"

namespace stoker::mpi {

struct Setting {
  std::string name;   // as the user gives it: "seed", "logical_shards"
  std::string value;  // as the user would write it: compared byte for byte
};

// Collective. Returns when every rank gave the same values (the same settings, by name, in the
// same order); otherwise throws ConfigError on every rank (collective), its message `what` and
// a line per setting that differs ("seed: 1 on rank 0; 2 on rank 1").
void RequireAgreement(const Comm& comm, const std::vector<Setting>& settings,
                      const std::string& what);

// "rank 3", "ranks 0-3, 8, 10-11": at most `max_ranges` runs ("and N more"); `ranks` ascending.
// Pure.
std::string RankRuns(const std::vector<int>& ranks, size_t max_ranges = 8);

// "1 on ranks 0, 2-5; 2 on rank 1": each value of `value_of_rank` (indexed by rank) with the
// ranks that gave it, most common value first, at most `max_values` values, each with at most
// `max_ranges` runs of ranks ("and N more"). Pure.
std::string ValuesByRank(const std::vector<std::string>& value_of_rank, size_t max_values = 4,
                         size_t max_ranges = 8);

}  // namespace stoker::mpi
