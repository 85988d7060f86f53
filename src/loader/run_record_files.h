// The files of run records (audit/run_records.h; docs/format.md, "Piece traces"):
//   TRACE_DIR/from-<S>/run.json    who the run is and when it started: written once, atomically,
//                                  by rank 0 before any rank writes a record
//   TRACE_DIR/from-<S>/run.clock   the time of rank 0's latest batch, rewritten in place as the
//                                  run goes (PieceTraceWriter, at most every 0.1 s and at its end)
//   TRACE_DIR/superseded/<id>/from-<S'>/   a run folder set aside by the run <id>, which started
//                                  at step S <= S': its run.json and run.clock, without the
//                                  records (they are replayed), so that the audit can tell whether
//                                  it was still writing when it was set aside
// Times are the UTC wall clock of rank 0's node, in seconds since the epoch, to the microsecond.
//
// Not collective; rank 0 of a run calls the writing side (OpenPieceTrace), `stoker audit` the
// reading side. Thread safety: plain functions.
#pragma once

#include <cstdint>
#include <string>

#include "audit/run_records.h"

namespace stoker {

// Wall clock now, UTC seconds since the epoch.
double WallClockNow();

// This process as a run from `start_step` on `world` ranks, starting now: host, pid,
// SLURM_JOB_ID, and an id of the three.
RunRecord RecordThisRun(uint64_t start_step, uint64_t world);

// Writes `record` to RUN_DIR/run.json atomically. Throws IoError.
void WriteRunRecord(const std::string& run_dir, const RunRecord& record);

// The text of run.clock for `seconds` ("1764583202.456789\n").
std::string ClockText(double seconds);

// Sets the run folder TRACE_DIR/<name> aside for the run `by` (an id): moves it to
// TRACE_DIR/superseded/<by>/<name> and removes its rank files there. A folder without run.json
// (an older stoker's) is removed, as before. Throws IoError naming the folder.
void SetRunAside(const std::string& trace_dir, const std::string& name, const std::string& by);

// The records of every run folder of TRACE_DIR that has one, and of every run set aside.
// Throws DataError naming a run.json that is not one, or that names another step than its
// folder's; a run.clock that cannot be read is left out (as if the run wrote no batch).
RunRecords ReadRunRecords(const std::string& trace_dir);

}  // namespace stoker
