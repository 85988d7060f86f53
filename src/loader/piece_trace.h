// Piece traces, the internal side of stoker/trace.h (the writer and the layout are public): the
// preparation of the trace folder and the reading of every run for `stoker audit`.
//
// A run that starts from step S supersedes every earlier run's steps after S (they are replayed):
// PrepareTraceDir sets the folders from-<S'> with S' >= S aside before the run writes its own. The
// history under TRACE_DIR is then linear: run i is valid for steps (S_i, S_{i+1}]. Who each run
// is and when it wrote: loader/run_record_files.h.
//
// Records are written in the host's byte order; stoker runs on little-endian hosts only
// (docs/format.md). The format is documented in docs/format.md ("Piece traces").
//
// OpenPieceTrace is collective; the rest is not.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "audit/piece_audit.h"  // TraceRecord, TraceRun
#include "audit/run_records.h"
#include "mpi/comm.h"
#include "stoker/loader.h"
#include "stoker/trace.h"

namespace stoker {

// Creates TRACE_DIR, sets every TRACE_DIR/from-<S'> with S' >= run.start_step aside
// (SetRunAside), and writes `run` into the run's folder (WriteRunRecord). Call on one rank (rank
// 0), then make the other ranks wait (a barrier) before they open their writers.
void PrepareTraceDir(const std::string& trace_dir, const RunRecord& run);

// Collective over `comm`: stoker/trace.h's OpenPieceTrace on stoker's own communicator.
void OpenPieceTrace(const mpi::Comm& comm, const Loader& loader, const std::string& trace_dir,
                    uint64_t start_step, std::optional<PieceTraceWriter>* writer);

// Every run under `trace_dir`, by increasing start step, each rank's records in file order (a
// trailing partial record is dropped and its size noted in TraceRun::partial_bytes). Entries of
// TRACE_DIR not named from-<S> are ignored, and so are files of a run folder not named
// rank-<r>-of-<W>.trace, and a run folder with a run record but no rank file (a run killed before
// its ranks opened their files: it recorded nothing). Throws IoError or DataError naming the file
// or folder (a missing rank file, a world size that differs between the files of one run, a run
// folder without rank files, a dataset index above 2^32 - 1).
std::vector<TraceRun> ReadTraceDir(const std::string& trace_dir);

}  // namespace stoker
