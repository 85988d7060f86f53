// Piece traces: what every rank was handed, step by step, written as it is delivered, so that a
// run (or a chain of runs resumed from checkpoints, on any rank counts) can be audited afterwards
// for tokens lost or repeated (`stoker audit`, docs/operations.md).
//
//   TRACE_DIR/from-<S>/rank-<r>-of-<W>.trace
//
// S is the global step the run started from (0, or the step it resumed), W its world size. A
// trace file is a sequence of records of six little-endian uint64:
//   step, dataset, document, epoch, first framed position, count
// (one record per DocPiece of the batch of that step, in row order). Each batch's records are
// written with write(2) before the batch is used, so a run killed at any moment leaves the records
// of every batch it was handed (possibly the last one in part, which the reader drops).
//
// A run that starts from step S supersedes every earlier run's steps after S (they are replayed):
// PrepareTraceDir removes the folders from-<S'> with S' >= S before the run writes its own. The
// history under TRACE_DIR is then linear: run i is valid for steps (S_i, S_{i+1}].
//
// Records are written in the host's byte order; stoker runs on little-endian hosts only
// (docs/format.md). The format is documented in docs/format.md ("Piece traces").
//
// OpenPieceTrace is collective; the rest is not. The writer is used by one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/piece_audit.h"  // TraceRecord, TraceRun
#include "mpi/comm.h"
#include "stoker/loader.h"

namespace stoker {

// Removes TRACE_DIR/from-<S'> for every S' >= start_step and creates TRACE_DIR. Call on one rank
// (rank 0), then make the other ranks wait (a barrier) before they open their writers.
void PrepareTraceDir(const std::string& trace_dir, uint64_t start_step);

class PieceTraceWriter {
 public:
  // Creates TRACE_DIR/from-<start_step>/rank-<rank>-of-<world>.trace afresh. Throws IoError.
  PieceTraceWriter(const std::string& trace_dir, uint64_t start_step, int rank, int world);
  ~PieceTraceWriter();
  PieceTraceWriter(const PieceTraceWriter&) = delete;
  PieceTraceWriter& operator=(const PieceTraceWriter&) = delete;

  // Appends the records of `batch` (its step and pieces). Throws IoError naming the file.
  void Write(const Batch& batch);

 private:
  std::string path_;
  int fd_ = -1;
  std::vector<uint64_t> buffer_;  // one batch's records, reused
};

// Collective over `comm`: rank 0 prepares TRACE_DIR for a run from `start_step`, then every rank
// opens its writer into `writer`; a failure on any rank fails all of them together.
void OpenPieceTrace(const mpi::Comm& comm, const std::string& trace_dir, uint64_t start_step,
                    std::optional<PieceTraceWriter>* writer);

// Every run under `trace_dir`, by increasing start step, each rank's records in file order (a
// trailing partial record is dropped and its size noted in TraceRun::partial_bytes). Entries of
// TRACE_DIR not named from-<S> are ignored, and so are files of a run folder not named
// rank-<r>-of-<W>.trace. Throws IoError or DataError naming the file or folder (a missing rank
// file, a world size that differs between the files of one run, a run folder without rank files,
// a dataset index above 2^32 - 1).
std::vector<TraceRun> ReadTraceDir(const std::string& trace_dir);

}  // namespace stoker
