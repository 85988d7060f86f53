// Run records: what each traced run says of itself (TRACE_DIR/from-<S>/run.json and run.clock,
// written by loader/run_record_files.h; docs/format.md, "Piece traces"), and the check that the
// runs of a trace folder ran one after another, as a chain of resumes does, never two at once.
//
// The piece audit takes the history as linear: run i is killed or stops, then run i + 1 starts
// (possibly from a step before run i's last one, which it replays, possibly on another number of
// ranks). Two runs writing into one trace folder at the same time (a job submitted twice with
// different checkpoint folders, or where the checkpoint lock does not work) break that: their
// steps may even audit clean while each delivered the other's documents again. The rule:
//   - consecutive runs of the chain (by start step): run i last wrote no later than run i + 1
//     started, within `tolerance` seconds (the clocks of two nodes differ a little);
//   - a run set aside by a later one (one that started at the same or an earlier step, under
//     TRACE_DIR/superseded/<id>/): it last wrote no later than that run started, likewise.
// A run that breaks it is a problem naming both runs (step, ranks, host, pid, Slurm job, times).
// A run folder without a record (written by an older stoker) is not checked, and a note says so.
//
// Pure: the caller reads the files; times are values here (UTC, seconds since the epoch).
// Thread safety: plain functions over values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "audit/piece_audit.h"

namespace stoker {

// Within this many seconds a run may seem to have written after the next one started: the
// clocks of two nodes under NTP differ by milliseconds; a resume starts seconds after its
// predecessor ends (launch, discovery, loading the checkpoint); two jobs at once overlap for
// minutes. `stoker audit --clock-tolerance` changes it.
constexpr double kDefaultClockTolerance = 2.0;

struct RunRecord {
  uint64_t start_step = 0;
  uint64_t world = 0;
  std::string id;      // unique in the trace folder: <host>-<pid>-<started, microseconds>
  double started = 0;  // rank 0's clock when the run prepared the trace folder
  std::optional<double> last_write;  // rank 0's clock at its latest batch (run.clock); none: none
  std::string host;
  uint64_t pid = 0;
  std::string slurm_job;  // SLURM_JOB_ID; empty when not under Slurm
  bool operator==(const RunRecord&) const = default;

  // The last moment the run is known to have been at work.
  double LastActive() const { return last_write.value_or(started); }
};

// A run folder that a later run set aside (TRACE_DIR/superseded/<id>/from-<S>): its record,
// and the id of the run that set it aside.
struct SetAsideRun {
  RunRecord record;
  std::string superseded_by;
};

struct RunRecords {
  std::map<uint64_t, RunRecord> chain;  // by start step: the runs from-<S> with a record
  std::vector<SetAsideRun> set_aside;
};

// "2026-12-01 10:00:02.456 UTC": `seconds` since the epoch, to the millisecond.
std::string FormatUtc(double seconds);

// Checks `records` against the chain of `report` (its runs, as AuditTrace found them): adds a
// problem, before every other, for each two runs that ran at the same time (above), and for a
// record whose world size is not its run's; notes on the runs not checked, and on each set-aside
// run that had stopped in time.
void CheckRunRecords(const RunRecords& records, double tolerance, AuditReport* report);

}  // namespace stoker
