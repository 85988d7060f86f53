// Run records and the check that no two runs of a trace folder ran at the same time
// (audit/run_records.h), on hand-made records: a chain whose runs each started after the previous
// one's last batch is clean, also within the clock tolerance; a run still writing after the next
// one started, or after the run that set it aside started, is a problem naming both runs and
// coming first; runs without a record are noted, not checked. Then the files
// (loader/run_record_files.h) in one process: PrepareTraceDir writes run.json, rank 0's writer
// keeps run.clock, a run from the same step sets the earlier folder aside without its records,
// and a writer that goes on after being set aside is caught, as two runs at once would be.
#include "audit/run_records.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/test_support.h"
#include "loader/piece_trace.h"
#include "loader/run_record_files.h"
#include "stoker/error.h"

namespace stoker {
namespace {

using testing::ExpectMentions;
using testing::TempDir;

constexpr double kT0 = 1764583202.4567;  // 2025-12-01 10:00:02.457 UTC

RunRecord Record(uint64_t start, uint64_t world, double started, std::optional<double> last) {
  RunRecord r;
  r.start_step = start;
  r.world = world;
  r.started = started;
  r.last_write = last;
  r.host = fmt::format("node{}", start);
  r.pid = 100 + start;
  r.id = fmt::format("{}-{}-{}", r.host, r.pid, start);
  return r;
}

// A report with these runs (start step, world), as AuditTrace would give it.
AuditReport ReportOf(std::vector<std::pair<uint64_t, uint64_t>> runs) {
  AuditReport report;
  for (const auto& [start, world] : runs) report.runs.push_back({start, world});
  return report;
}

TEST(RunRecords, AChainOfRunsOneAfterAnotherIsClean) {
  RunRecords records;
  records.chain[0] = Record(0, 4, kT0, kT0 + 60);
  records.chain[12] = Record(12, 2, kT0 + 65, kT0 + 100);
  records.chain[24] = Record(24, 3, kT0 + 98.5, std::nullopt);  // 1.5 s early: clock skew
  AuditReport report = ReportOf({{0, 4}, {12, 2}, {24, 3}});
  CheckRunRecords(records, 2.0, &report);
  EXPECT_TRUE(report.clean()) << report.problems.at(0);
  EXPECT_TRUE(report.notes.empty());
  for (const RunSummary& run : report.runs) EXPECT_TRUE(run.notes.empty());
}

TEST(RunRecords, ARunStillWritingAfterTheNextStartedIsNamedFirst) {
  RunRecords records;
  records.chain[0] = Record(0, 1, kT0, kT0 + 10);
  records.chain[5] = Record(5, 2, kT0 + 7, kT0 + 12);
  records.chain[5].slurm_job = "77";
  AuditReport report = ReportOf({{0, 1}, {5, 2}});
  report.AddFirst("from-5 rank 1 of 2: no records for step 9");  // an earlier problem
  CheckRunRecords(records, 2.0, &report);
  ASSERT_EQ(report.problem_count, 2u);
  const std::string& p = report.problems[0];
  ExpectMentions(p,
                 "runs from-0 (1 rank; host node0, pid 100, started 2025-12-01 10:00:02.457 "
                 "UTC) and from-5 (2 ranks; host node5, pid 105, Slurm job 77, started "
                 "2025-12-01 10:00:09.457 UTC) ran at the same time");
  ExpectMentions(p,
                 "the first still wrote at 2025-12-01 10:00:12.457 UTC, 3.000 s after the "
                 "second started (clock tolerance 2 s)");
  EXPECT_EQ(report.problems[1], "from-5 rank 1 of 2: no records for step 9");

  AuditReport tolerant = ReportOf({{0, 1}, {5, 2}});
  CheckRunRecords(records, 3.5, &tolerant);
  EXPECT_TRUE(tolerant.clean());
}

TEST(RunRecords, ARunThatStartedBeforeAnEarlierStepsRunIsNamed) {
  // from-5 started first: a from-0 started later would have set it aside, had they not overlapped.
  RunRecords records;
  records.chain[0] = Record(0, 2, kT0 + 30, kT0 + 40);
  records.chain[5] = Record(5, 1, kT0, kT0 + 50);
  AuditReport report = ReportOf({{0, 2}, {5, 1}});
  CheckRunRecords(records, 2.0, &report);
  ASSERT_EQ(report.problem_count, 1u);
  ExpectMentions(report.problems[0], "40.000 s after the second started");
}

TEST(RunRecords, ASetAsideRunIsCheckedAgainstTheRunThatSetItAside) {
  RunRecords records;
  records.chain[0] = Record(0, 2, kT0 + 3, kT0 + 20);
  const RunRecord& by = records.chain[0];
  records.set_aside.push_back({Record(0, 1, kT0, kT0 + 15), by.id});       // went on: two at once
  records.set_aside.push_back({Record(8, 4, kT0 - 60, kT0 - 30), by.id});  // had stopped
  records.set_aside.push_back({Record(9, 4, kT0 - 90, kT0 - 80), "gone-1-2"});
  AuditReport report = ReportOf({{0, 2}});
  CheckRunRecords(records, 2.0, &report);
  ASSERT_EQ(report.problem_count, 1u);
  ExpectMentions(report.problems[0], "runs from-0 (1 rank; host node0, pid 100, started");
  ExpectMentions(report.problems[0], "and from-0 (2 ranks; host node0");
  ExpectMentions(report.problems[0], "ran at the same time: the first still wrote at");
  ExpectMentions(report.problems[0], "12.000 s after the second started");
  ExpectMentions(report.problems[0], "set aside as superseded/" + by.id + "/from-0");
  ASSERT_EQ(report.runs[0].notes.size(), 1u);
  ExpectMentions(report.runs[0].notes[0], "set aside superseded/" + by.id + "/from-8 (4 ranks)");
  ExpectMentions(report.runs[0].notes[0], "33.000 s before this run started");
  ASSERT_EQ(report.notes.size(), 1u);
  ExpectMentions(report.notes[0], "superseded/gone-1-2/from-9: the run that set it aside is not");
}

TEST(RunRecords, RunsWithoutRecordsAreNotedNotChecked) {
  RunRecords records;
  records.chain[0] = Record(0, 1, kT0, kT0 + 100);
  records.chain[20] = Record(20, 3, kT0 + 10, kT0 + 11);  // overlaps from-0, but from-9 is between
  records.chain[30] = Record(30, 3, kT0 + 50, std::nullopt);  // a run that recorded nothing
  AuditReport report = ReportOf({{0, 1}, {9, 2}, {20, 2}});
  CheckRunRecords(records, 2.0, &report);
  ASSERT_EQ(report.problem_count, 1u);
  EXPECT_EQ(report.problems[0],
            "from-20: its run record says 3 ranks but its rank files are of 2 ranks: two runs "
            "wrote into the folder");
  ASSERT_EQ(report.runs[1].notes.size(), 1u);
  ExpectMentions(report.runs[1].notes[0],
                 "no run record (run.json; an older stoker wrote this "
                 "run): whether it ran at the same time as another run "
                 "was not checked");
  ASSERT_EQ(report.notes.size(), 1u);
  ExpectMentions(report.notes[0], "from-30: a run record (from-30 (3 ranks; host node30");
}

TEST(RunRecords, TimesAreWrittenInUtcToTheMillisecond) {
  EXPECT_EQ(FormatUtc(0), "1970-01-01 00:00:00.000 UTC");
  EXPECT_EQ(FormatUtc(kT0), "2025-12-01 10:00:02.457 UTC");
  EXPECT_EQ(FormatUtc(kT0 + 0.543), "2025-12-01 10:00:03.000 UTC");
  EXPECT_EQ(ClockText(kT0), "1764583202.456700\n");
}

Batch BatchAt(uint64_t step) {
  Batch batch;
  batch.step = step;
  batch.pieces = {{0, step, 0, 0, 64}};
  return batch;
}

TEST(RunRecordFiles, PrepareWritesTheRecordAndRankZeroKeepsTheClock) {
  TempDir dir;
  const std::string trace = dir / "trace";
  const RunRecord run = RecordThisRun(5, 2);
  EXPECT_FALSE(run.host.empty());
  EXPECT_NEAR(run.started, WallClockNow(), 5.0);
  PrepareTraceDir(trace, run);
  RunRecords read = ReadRunRecords(trace);
  ASSERT_EQ(read.chain.count(5), 1u);
  EXPECT_EQ(read.chain[5], run);  // no clock yet
  {
    PieceTraceWriter rank0(trace, 5, 0, 2), rank1(trace, 5, 1, 2);
    rank0.Write(BatchAt(6));
    rank1.Write(BatchAt(6));
  }
  read = ReadRunRecords(trace);
  ASSERT_TRUE(read.chain[5].last_write.has_value());
  EXPECT_GE(*read.chain[5].last_write, run.started);
  EXPECT_LE(*read.chain[5].last_write, WallClockNow());
  EXPECT_TRUE(read.set_aside.empty());
}

TEST(RunRecordFiles, ARunFromTheSameStepSetsTheEarlierAsideAndCatchesItGoingOn) {
  TempDir dir;
  const std::string trace = dir / "trace";
  const RunRecord first = RecordThisRun(0, 1);
  PrepareTraceDir(trace, first);
  PieceTraceWriter live(trace, 0, 0, 1);
  live.Write(BatchAt(1));

  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const RunRecord second = RecordThisRun(0, 2);
  PrepareTraceDir(trace, second);
  const std::string aside = trace + "/superseded/" + second.id + "/from-0";
  EXPECT_TRUE(std::filesystem::exists(aside + "/run.json"));
  EXPECT_TRUE(std::filesystem::exists(aside + "/run.clock"));
  EXPECT_FALSE(std::filesystem::exists(aside + "/rank-0-of-1.trace"));  // replayed: gone
  {
    PieceTraceWriter rank0(trace, 0, 0, 2), rank1(trace, 0, 1, 2);
    rank0.Write(BatchAt(1));
    rank1.Write(BatchAt(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  live.Write(BatchAt(2));  // the first run goes on, into a folder set aside

  const RunRecords records = ReadRunRecords(trace);
  ASSERT_EQ(records.set_aside.size(), 1u);
  EXPECT_EQ(records.set_aside[0].superseded_by, second.id);
  EXPECT_EQ(records.set_aside[0].record.world, 1u);
  EXPECT_GT(records.set_aside[0].record.LastActive(), second.started + 0.1);
  const std::vector<TraceRun> runs = ReadTraceDir(trace);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].world, 2u);
  AuditReport report = AuditTrace(runs, nullptr);
  CheckRunRecords(records, 0.1, &report);
  ASSERT_FALSE(report.clean());
  ExpectMentions(report.problems[0], "runs from-0 (1 rank; host ");
  ExpectMentions(report.problems[0], "and from-0 (2 ranks; host ");
  ExpectMentions(report.problems[0], "ran at the same time");
}

TEST(RunRecordFiles, ARecordThatIsNotOneIsNamed) {
  TempDir dir;
  const std::string trace = dir / "trace";
  PrepareTraceDir(trace, RecordThisRun(3, 1));
  std::filesystem::create_directories(trace + "/from-4");
  std::filesystem::copy_file(trace + "/from-3/run.json", trace + "/from-4/run.json");
  try {
    ReadRunRecords(trace);
    ADD_FAILURE() << "a record in another run's folder was not refused";
  } catch (const DataError& e) {
    ExpectMentions(e.what(),
                   "from-4/run.json: the record of a run from step 3, in the folder of "
                   "a run from step 4");
  }
  std::ofstream(trace + "/from-4/run.json") << "{\"start_step\": 4}";
  try {
    ReadRunRecords(trace);
    ADD_FAILURE() << "a broken record was not refused";
  } catch (const DataError& e) {
    ExpectMentions(e.what(), "from-4/run.json: not a run record");
  }
}

}  // namespace
}  // namespace stoker
