// The example trainer's own collectives, on MPI's C API (the trainer is built on stoker's
// public headers only, as a user's trainer would be). Each is collective over `comm`.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace stoker::train {

int SizeOf(MPI_Comm comm);

// The ranks of `comm` that share this rank's node (its memory), this one included.
int RanksOnThisNode(MPI_Comm comm);

// Every rank's model checksum (32 hex digits, ModelChecksum), indexed by rank.
std::vector<std::string> AllChecksums(MPI_Comm comm, int ranks, const std::string& mine);

}  // namespace stoker::train
