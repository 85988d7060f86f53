// Rank-aware logging on top of spdlog, for programs on stoker (the library logs through spdlog's
// default logger; a program sets it up here). Part of stoker::program.
//
// InitLogging installs the default spdlog logger: plain text on stderr (no colour codes: under
// mpirun every rank's stderr is a pipe or a terminal shared by all ranks), every line carrying
// the rank. Rank 0 logs at `level`; other ranks log warnings and errors only, so that a job of a
// thousand ranks prints its progress once and its problems wherever they happen.
//
// Call it once per process, after the rank is known. Thread safe afterwards (spdlog's _mt sink).
#pragma once

#include <spdlog/spdlog.h>

namespace stoker::program {

void InitLogging(int rank, spdlog::level::level_enum level = spdlog::level::info);

}  // namespace stoker::program
