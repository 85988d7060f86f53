// Piece traces: what every rank was handed, step by step, written as it is delivered, so that a
// run (or a chain of runs resumed from checkpoints, on any rank counts) can be audited afterwards
// for tokens lost or repeated (`stoker audit TRACE_DIR`, docs/operations.md).
//
//   TRACE_DIR/from-<S>/rank-<r>-of-<W>.trace
//
// S is the global step the run started from (0, or the step it resumed), W its world size. A
// trace file is a sequence of records of six little-endian uint64:
//   step, dataset, document, epoch, first framed position, count
// (one record per DocPiece of the batch of that step, in row order; docs/format.md, "Piece
// traces"). Each batch's records are written with write(2) before the batch is used, so a run
// killed at any moment leaves the records of every batch it was handed (possibly the last one in
// part, which the reader drops).
//
// A run that starts from step S supersedes every earlier run's steps after S (they are replayed):
// OpenPieceTrace sets the folders from-<S'> with S' >= S aside (TRACE_DIR/superseded/, their
// records removed) before the run writes its own, so the history under TRACE_DIR is linear. It
// also writes who the run is and when it started (from-<S>/run.json, rank 0), and rank 0's writer
// keeps the time of its latest batch in from-<S>/run.clock, so that `stoker audit` can tell two
// runs that wrote into one trace folder at the same time from a chain of resumes.
//
// OpenPieceTrace is collective; the writer is not, and is used by one thread. libstoker.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stoker/loader.h"

namespace stoker {

class PieceTraceWriter {
 public:
  // Creates TRACE_DIR/from-<start_step>/rank-<rank>-of-<world>.trace afresh, and on rank 0
  // from-<start_step>/run.clock. Throws IoError.
  PieceTraceWriter(const std::string& trace_dir, uint64_t start_step, int rank, int world);
  ~PieceTraceWriter();
  PieceTraceWriter(const PieceTraceWriter&) = delete;
  PieceTraceWriter& operator=(const PieceTraceWriter&) = delete;

  // Appends the records of `batch` (its step and pieces); on rank 0 the time goes to run.clock
  // (at most every 0.1 s, and when the writer is destroyed). Throws IoError naming the file.
  void Write(const Batch& batch);

 private:
  void WriteClock();

  std::string path_;
  int fd_ = -1;
  std::vector<uint64_t> buffer_;  // one batch's records, reused
  std::string clock_path_;        // rank 0: from-<S>/run.clock
  int clock_fd_ = -1;             // rank 0 only
  double last_batch_ = 0;         // UTC seconds: when the latest batch was written
  double clock_written_ = 0;      // UTC seconds: what run.clock holds
};

// Collective over `comm`, the ranks of `loader`'s job: rank 0 prepares TRACE_DIR for a run from
// `start_step` (creates it, removes the runs it supersedes), then every rank that writes
// `loader`'s state opens its writer into `writer`, named by its data-parallel rank and size
// (in a parallel layout the replica's first rank: one trace per data-parallel rank, as a job
// without a layout would write; the others get none); a failure on any rank fails all of them
// together.
void OpenPieceTrace(MPI_Comm comm, const Loader& loader, const std::string& trace_dir,
                    uint64_t start_step, std::optional<PieceTraceWriter>* writer);

}  // namespace stoker
