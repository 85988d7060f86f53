#include "audit/run_records.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <utility>

namespace stoker {

namespace {

std::string Ranks(uint64_t world) { return fmt::format("{} rank{}", world, world == 1 ? "" : "s"); }

// "from-0 (2 ranks; host n1, pid 7, Slurm job 12, started 2026-12-01 10:00:02.456 UTC)".
std::string Who(const RunRecord& r) {
  return fmt::format("from-{} ({}; host {}, pid {}{}, started {})", r.start_step, Ranks(r.world),
                     r.host, r.pid, r.slurm_job.empty() ? "" : ", Slurm job " + r.slurm_job,
                     FormatUtc(r.started));
}

// The problem when `earlier` was still at work after `later` started, if it was (else none).
std::optional<std::string> Overlap(const RunRecord& earlier, const RunRecord& later,
                                   double tolerance, const std::string& aftermath) {
  const double after = earlier.LastActive() - later.started;
  if (!(after > tolerance)) return std::nullopt;
  return fmt::format(
      "runs {} and {} ran at the same time: the first {} at {}, {:.3f} s after the second "
      "started (clock tolerance {} s); {}",
      Who(earlier), Who(later), earlier.last_write ? "still wrote" : "started",
      FormatUtc(earlier.LastActive()), after, tolerance, aftermath);
}

const RunRecord* FindRun(const RunRecords& records, const std::string& id) {
  for (const auto& [start, r] : records.chain) {
    if (r.id == id) return &r;
  }
  for (const SetAsideRun& s : records.set_aside) {
    if (s.record.id == id) return &s.record;
  }
  return nullptr;
}

// The summary of `r` when it is a run of the chain (not one set aside), else none.
RunSummary* ChainSummary(const RunRecords& records, const RunRecord& r, AuditReport* report) {
  const auto found = records.chain.find(r.start_step);
  if (found == records.chain.end() || found->second.id != r.id) return nullptr;
  for (RunSummary& run : report->runs) {
    if (run.start_step == r.start_step) return &run;
  }
  return nullptr;
}

// Consecutive runs of the chain; appends to `problems`.
void CheckChain(const RunRecords& records, double tolerance, AuditReport* report,
                std::vector<std::string>* problems) {
  const RunRecord* previous = nullptr;
  for (RunSummary& run : report->runs) {
    const auto found = records.chain.find(run.start_step);
    if (found == records.chain.end()) {
      run.notes.push_back(
          "no run record (run.json; an older stoker wrote this run): whether it ran at the same "
          "time as another run was not checked");
      previous = nullptr;
      continue;
    }
    const RunRecord& r = found->second;
    if (r.world != run.world) {
      problems->push_back(fmt::format(
          "from-{}: its run record says {} but its rank files are of {}: two runs wrote into "
          "the folder",
          run.start_step, Ranks(r.world), Ranks(run.world)));
    }
    if (previous != nullptr) {
      if (auto overlap = Overlap(*previous, r, tolerance,
                                 "the first's steps after the second's start are not audited, "
                                 "and either may have delivered the other's documents again")) {
        problems->push_back(std::move(*overlap));
      }
    }
    previous = &r;
  }
}

// Records of runs the audit has no trace of: killed before any rank opened its file.
void NoteRunsThatRecordedNothing(const RunRecords& records, AuditReport* report) {
  for (const auto& [start, r] : records.chain) {
    const auto is_run = [start = start](const RunSummary& run) { return run.start_step == start; };
    if (std::none_of(report->runs.begin(), report->runs.end(), is_run)) {
      report->notes.push_back(fmt::format(
          "from-{}: a run record ({}) without rank files: the run recorded nothing (killed "
          "before its ranks opened their files)",
          start, Who(r)));
    }
  }
}

// Runs set aside by later ones; appends to `problems`.
void CheckSetAside(const RunRecords& records, double tolerance, AuditReport* report,
                   std::vector<std::string>* problems) {
  for (const SetAsideRun& s : records.set_aside) {
    const std::string where =
        fmt::format("superseded/{}/from-{}", s.superseded_by, s.record.start_step);
    const RunRecord* by = FindRun(records, s.superseded_by);
    if (by == nullptr) {
      report->notes.push_back(fmt::format(
          "{}: the run that set it aside is not in the trace folder: not checked", where));
      continue;
    }
    const std::string aftermath = fmt::format(
        "the first was set aside as {} when the second started, so the audit does not see the "
        "steps it went on delivering",
        where);
    if (auto overlap = Overlap(s.record, *by, tolerance, aftermath)) {
      problems->push_back(std::move(*overlap));
    } else if (RunSummary* summary = ChainSummary(records, *by, report)) {
      summary->notes.push_back(
          fmt::format("set aside {} ({}), which had stopped {:.3f} s before "
                      "this run started",
                      where, Ranks(s.record.world), by->started - s.record.LastActive()));
    }
  }
}

}  // namespace

std::string FormatUtc(double seconds) {
  const double whole = std::floor(seconds);
  auto millis = static_cast<int>(std::lround((seconds - whole) * 1000));
  auto t = static_cast<std::time_t>(whole);
  if (millis == 1000) millis = 0, ++t;
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03} UTC", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
}

void CheckRunRecords(const RunRecords& records, double tolerance, AuditReport* report) {
  std::vector<std::string> problems;
  CheckChain(records, tolerance, report, &problems);
  NoteRunsThatRecordedNothing(records, report);
  CheckSetAside(records, tolerance, report, &problems);
  for (auto it = problems.rbegin(); it != problems.rend(); ++it) report->AddFirst(std::move(*it));
}

}  // namespace stoker
