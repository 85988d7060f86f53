// Errors across ranks, for programs on stoker: no rank throws out of a collective alone.
//
// FailTogether runs a rank's local work (checks, a file only rank 0 reads or writes) and then
// exchanges every rank's outcome: if any rank failed, every rank throws the error of the lowest
// failing rank, of the same kind and marked collective() (stoker/error.h). RunProgram is the
// catch-all of a program's main() that goes with it. BroadcastBytes hands rank `root`'s bytes to
// every rank (of any size: large payloads go in pieces).
//
// Both take a communicator the caller owns and are collective over it: every rank calls
// them, in the same order. Each call duplicates the communicator for its own messages (one
// MPI_Comm_dup, a collective of its own: fine at a save or at start-up, not for every step).
// A failing MPI call is an MpiError. Not thread safe: one thread per communicator. libstoker.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>

namespace stoker {

// Collective. Runs `local` on this rank, then agrees with the other ranks on the outcome: returns
// normally when every rank succeeded, otherwise throws on every rank the error of the lowest
// failing rank (same kind, same message, collective() true). stoker's error kinds keep their
// kind; std::filesystem::filesystem_error becomes IoError; anything else becomes Error.
void FailTogether(MPI_Comm comm, const std::function<void()>& local);

// Collective. Rank `root`'s `bytes` replace every other rank's.
void BroadcastBytes(MPI_Comm comm, std::string* bytes, int root);

}  // namespace stoker
