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
// OpenPieceTrace removes the folders from-<S'> with S' >= S before the run writes its own, so the
// history under TRACE_DIR is linear.
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

// Collective over `comm`: rank 0 prepares TRACE_DIR for a run from `start_step` (creates it,
// removes the runs it supersedes), then every rank opens its writer into `writer`; a failure on
// any rank fails all of them together.
void OpenPieceTrace(MPI_Comm comm, const std::string& trace_dir, uint64_t start_step,
                    std::optional<PieceTraceWriter>* writer);

}  // namespace stoker
