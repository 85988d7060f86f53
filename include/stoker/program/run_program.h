// The catch-all of a program's main() on stoker, after MPI_Init and InitLogging
// (stoker/program/log.h): errors end the program the same way on every rank, with FailTogether
// (stoker/collective.h) making most of them collective. Part of stoker::program.
#pragma once

#include <mpi.h>

#include <functional>

namespace stoker::program {

// Runs `body` and returns its exit code. An error that every rank raised together (collective)
// is logged once, by rank 0, and every rank returns 1 (3 for a BusyError, stoker/error.h); any
// other error is logged by the rank that saw it, which then ends the job with MPI_Abort so that no
// other rank waits for it for ever (alone, on one rank, it returns 1: one line, no MPI_Abort
// banner).
int RunProgram(MPI_Comm world, const std::function<int()>& body);

}  // namespace stoker::program
