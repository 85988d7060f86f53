// A run identity: 128 random bits, as 32 lowercase hex digits, that every rank file of one save
// carries (RankCheckpoint::run, docs/checkpoint.md), so that a step folder holding a rank file of
// another run is told from one save. A Loader draws one when it is built (rank 0 draws, every
// rank learns it), a resumed run too; `stoker reshard` keeps the one it reads. Not a seed:
// nothing a run delivers depends on it. Thread safe.
#pragma once

#include <string>

namespace stoker {

// From std::random_device (the kernel's random source); a failure to read it is an IoError.
std::string NewRunId();

}  // namespace stoker
