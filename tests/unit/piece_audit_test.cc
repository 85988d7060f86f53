// The piece audit on simulated histories: a global stream of framed documents (two datasets,
// several epochs) is dealt out step by step, world x tokens-per-step at a time, rank after rank,
// so a history built from it delivers every token exactly once by construction. Runs resume at a
// step on another world size and may record steps past the next run's start (replayed). Clean
// histories pass with the right counts; tampered ones (a duplicated piece, a run that replays
// from the wrong step, a missing step, a partial step inside the history) are caught and named;
// superseded steps and a killed last run's partial step are left out. Also the trace files:
// write, read back, a trailing partial record dropped, PrepareTraceDir, a missing rank file.
#include "audit/piece_audit.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/test_support.h"
#include "loader/piece_trace.h"
#include "loader/run_record_files.h"
#include "stoker/error.h"

namespace stoker {
namespace {

using testing::ExpectMentions;
using testing::TempDir;

constexpr uint64_t kStepTokens = 64;     // per rank: rows x (seq_len + 1)
constexpr uint64_t kDocs[2] = {20, 13};  // documents per dataset

struct Doc {
  uint32_t dataset;
  uint64_t doc;
  uint64_t epoch;
  uint64_t length;  // framed
};

uint64_t FramedLength(uint32_t dataset, uint64_t doc) { return 1 + (doc * 37 + dataset * 11) % 90; }

// Datasets interleaved 2:1, each going through its documents epoch after epoch.
class PieceStream {
 public:
  explicit PieceStream(uint64_t tokens) {
    uint64_t next[2] = {0, 0}, at = 0;
    for (uint64_t k = 0; at < tokens; ++k) {
      const uint32_t d = k % 3 == 2 ? 1 : 0;
      const uint64_t n = next[d]++;
      docs_.push_back({d, n % kDocs[d], n / kDocs[d], FramedLength(d, n % kDocs[d])});
      starts_.push_back(at);
      at += docs_.back().length;
    }
  }

  // The pieces of global positions [begin, end), at `step`.
  std::vector<TraceRecord> Pieces(uint64_t step, uint64_t begin, uint64_t end) const {
    std::vector<TraceRecord> out;
    size_t i = std::upper_bound(starts_.begin(), starts_.end(), begin) - starts_.begin() - 1;
    for (uint64_t at = begin; at < end; ++i) {
      const Doc& d = docs_[i];
      const uint64_t first = at - starts_[i];
      const uint64_t count = std::min(d.length - first, end - at);
      out.push_back({step, d.dataset, d.doc, d.epoch, first, count});
      at += count;
    }
    return out;
  }

 private:
  std::vector<Doc> docs_;
  std::vector<uint64_t> starts_;
};

struct RunSpec {
  uint64_t start;
  uint64_t world;
  uint64_t recorded_end;               // steps (start, recorded_end] are recorded
  std::vector<uint64_t> rank_tokens{};  // per rank and step; empty: kStepTokens each
  uint64_t Tokens(uint64_t rank) const {
    return rank_tokens.empty() ? kStepTokens : rank_tokens[rank];
  }
  uint64_t StepTokens() const {
    uint64_t all = 0;
    for (uint64_t r = 0; r < world; ++r) all += Tokens(r);
    return all;
  }
};

// Runs of a linear history: run i goes on from the global position where run i - 1 stood at
// step S_i, whatever it recorded after that.
std::vector<TraceRun> MakeHistory(const std::vector<RunSpec>& specs) {
  static const PieceStream stream(2'000'000);
  std::vector<TraceRun> runs;
  uint64_t offset = 0;  // global position at the start of the current run
  for (size_t i = 0; i < specs.size(); ++i) {
    const RunSpec& spec = specs[i];
    if (i > 0) offset += (spec.start - specs[i - 1].start) * specs[i - 1].StepTokens();
    TraceRun run{spec.start, spec.world, std::vector<std::vector<TraceRecord>>(spec.world)};
    for (uint64_t step = spec.start + 1; step <= spec.recorded_end; ++step) {
      uint64_t begin = offset + (step - spec.start - 1) * spec.StepTokens();
      for (uint64_t r = 0; r < spec.world; ++r) {
        const auto pieces = stream.Pieces(step, begin, begin + spec.Tokens(r));
        run.ranks[r].insert(run.ranks[r].end(), pieces.begin(), pieces.end());
        begin += spec.Tokens(r);
      }
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

AuditCorpus CorpusOf(const std::vector<TraceRun>& runs) {
  AuditCorpus corpus{{"web", "code"}, {kDocs[0], kDocs[1]}, {kDocs[0], kDocs[1]}};
  corpus.named_docs = DocumentsNamed(runs, corpus.docs);
  for (uint32_t d = 0; d < 2; ++d) {
    corpus.framed_lengths.emplace_back();
    for (uint64_t doc : corpus.named_docs[d]) {
      corpus.framed_lengths[d].push_back(FramedLength(d, doc));
    }
  }
  return corpus;
}

std::string AllProblems(const AuditReport& report) {
  std::string all;
  for (const auto& p : report.problems) all += p + "\n";
  return all;
}

bool AnyProblemMentions(const AuditReport& report, const std::string& part) {
  return AllProblems(report).find(part) != std::string::npos;
}

// A rank of `run` whose records of `step` are two or more (so that dropping one leaves a part).
size_t RankWithSplitStep(const TraceRun& run, uint64_t step) {
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    if (std::count_if(run.ranks[r].begin(), run.ranks[r].end(),
                      [&](const TraceRecord& t) { return t.step == step; }) >= 2) {
      return r;
    }
  }
  ADD_FAILURE() << "no rank has two pieces at step " << step;
  return 0;
}

const std::vector<RunSpec> kChain = {{0, 4, 14}, {12, 2, 26}, {24, 3, 40}};

TEST(PieceAudit, CleanChainPassesWithItsCounts) {
  const AuditReport report = AuditTrace(MakeHistory(kChain), nullptr);
  EXPECT_TRUE(report.clean()) << AllProblems(report);
  EXPECT_EQ(report.steps, 40u);
  EXPECT_EQ(report.tokens, (12 * 4 + 12 * 2 + 16 * 3) * kStepTokens);
  ASSERT_EQ(report.runs.size(), 3u);
  const uint64_t ends[] = {12, 24, 40}, recorded[] = {14, 26, 40};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(report.runs[i].valid_end, ends[i]);
    EXPECT_EQ(report.runs[i].recorded_end, recorded[i]);
    EXPECT_EQ(report.runs[i].tokens_per_step, kStepTokens);
    EXPECT_EQ(report.runs[i].tokens, (ends[i] - kChain[i].start) * kChain[i].world * kStepTokens);
  }
  ASSERT_EQ(report.runs[0].notes.size(), 1u);
  EXPECT_EQ(report.runs[0].notes[0], "steps 13..14 replayed by from-12: ignored");
  EXPECT_TRUE(report.runs[2].notes.empty());
  uint64_t epoch_tokens = 0;
  for (const EpochSummary& e : report.epochs) epoch_tokens += e.tokens;
  EXPECT_EQ(epoch_tokens, report.tokens);
}

TEST(PieceAudit, RanksWithOtherBatchSizesAreCheckedEachAgainstItsOwn) {
  // Rank 1 takes batches twice the size of the others', in the first run and the resumed one.
  const std::vector<RunSpec> specs = {{0, 3, 12, {kStepTokens, 2 * kStepTokens, kStepTokens}},
                                      {10, 2, 20, {2 * kStepTokens, kStepTokens}}};
  auto runs = MakeHistory(specs);
  const AuditCorpus corpus = CorpusOf(runs);
  const AuditReport report = AuditTrace(runs, &corpus);
  EXPECT_TRUE(report.clean()) << AllProblems(report);
  EXPECT_EQ(report.tokens, 10 * 4 * kStepTokens + 10 * 3 * kStepTokens);
  ASSERT_EQ(report.runs.size(), 2u);
  EXPECT_EQ(report.runs[0].rank_tokens_per_step,
            (std::vector<uint64_t>{kStepTokens, 2 * kStepTokens, kStepTokens}));
  EXPECT_EQ(report.runs[1].valid_end, 20u);
  // A step of rank 1 that holds what the other ranks hold is still wrong for rank 1.
  runs = MakeHistory(specs);
  auto& rank1 = runs[0].ranks[1];
  uint64_t kept = 0;  // rank 1's step 5 cut to kStepTokens
  for (TraceRecord& t : rank1) {
    if (t.step != 5) continue;
    t.count = std::min(t.count, kStepTokens - kept);
    kept += t.count;
  }
  std::erase_if(rank1, [](const TraceRecord& t) { return t.count == 0; });
  const AuditReport short_step = AuditTrace(runs, nullptr);
  EXPECT_TRUE(AnyProblemMentions(
      short_step, fmt::format("from-0 rank 1 of 3 step 5: pieces of {} framed tokens, not the "
                              "rank's {} per step",
                              kStepTokens, 2 * kStepTokens)))
      << AllProblems(short_step);
}

TEST(PieceAudit, WithCorpusCountsWholeDocumentsAndChecksBounds) {
  auto runs = MakeHistory(kChain);
  const AuditCorpus corpus = CorpusOf(runs);
  const AuditReport report = AuditTrace(runs, &corpus);
  EXPECT_TRUE(report.clean()) << AllProblems(report);
  // 7,680 tokens over documents of about 45 framed tokens: epochs 0 and 1 of both datasets.
  for (const EpochSummary& e : report.epochs) {
    if (e.epoch > 1) continue;
    EXPECT_EQ(e.docs, kDocs[e.dataset]) << e.dataset << " " << e.epoch;
    EXPECT_EQ(e.complete, kDocs[e.dataset]) << e.dataset << " " << e.epoch;
  }
  AuditCorpus shorter = corpus;
  shorter.framed_lengths[1][3] -= 1;  // a document one token shorter than delivered
  shorter.docs[0] = 19;               // document 19 of web does not exist
  const AuditReport bad = AuditTrace(runs, &shorter);
  EXPECT_TRUE(AnyProblemMentions(bad,
                                 "dataset code document 3 epoch 0: a piece ends past its "
                                 "framed length"))
      << AllProblems(bad);
  EXPECT_TRUE(AnyProblemMentions(bad,
                                 "dataset web document 19 epoch 0: no such document (the "
                                 "dataset has 19)"))
      << AllProblems(bad);
}

// Audited with another framing than the runs had (--bos for a trace recorded without BOS),
// every document looks one token longer than delivered: never whole, never past its end. The
// audit is not clean and says why, first, in one problem; and the other way round too.
TEST(PieceAudit, AFramingThatIsNotTheRunsIsNamed) {
  auto runs = MakeHistory(kChain);
  AuditCorpus with_bos = CorpusOf(runs);
  with_bos.bos = true;
  for (auto& lengths : with_bos.framed_lengths) {
    for (uint64_t& n : lengths) n += 1;
  }
  const AuditReport report = AuditTrace(runs, &with_bos);
  ASSERT_FALSE(report.clean());
  EXPECT_EQ(report.problem_count, 1u) << AllProblems(report);
  ExpectMentions(report.problems.at(0),
                 "fall one framed token short of BOS tokens EOS: the "
                 "runs framed documents without BOS (audit them without "
                 "--bos)");

  AuditCorpus without = CorpusOf(runs);
  for (auto& lengths : without.framed_lengths) {
    for (uint64_t& n : lengths) n -= 1;
  }
  const AuditReport other = AuditTrace(runs, &without);
  ASSERT_FALSE(other.clean());
  ExpectMentions(other.problems.at(0),
                 "the runs framed documents with a BOS (audit them with "
                 "--bos)");
}

// A document that stops before its framed end while the rank goes on with another one.
TEST(PieceAudit, ADocumentThatStopsEarlyIsNamed) {
  auto runs = MakeHistory(kChain);
  AuditCorpus longer = CorpusOf(runs);
  longer.framed_lengths[0][4] += 5;  // document 4 of web: 5 framed tokens never delivered
  const AuditReport report = AuditTrace(runs, &longer);
  EXPECT_TRUE(AnyProblemMentions(report,
                                 "dataset web document 4 epoch 1 stops at framed "
                                 "position 59 of 64 (tokens EOS)"))
      << AllProblems(report);
}

TEST(PieceAudit, DuplicatedPieceIsNamed) {
  auto runs = MakeHistory(kChain);
  auto& records = runs[1].ranks[1];
  records.insert(records.begin() + 5, records[5]);
  const AuditReport report = AuditTrace(runs, nullptr);
  EXPECT_EQ(report.problem_count, 2u) << AllProblems(report);
  const TraceRecord& t = records[5];
  const std::string piece =
      fmt::format("from-12 rank 1 of 2 at step {}, [{}, {})", t.step, t.first, t.first + t.count);
  EXPECT_TRUE(AnyProblemMentions(
      report, fmt::format("document {} epoch {}: framed positions [{}, {}) delivered twice: by {} "
                          "and by {}",
                          t.doc, t.epoch, t.first, t.first + t.count, piece, piece)))
      << AllProblems(report);
  EXPECT_TRUE(AnyProblemMentions(report, fmt::format("from-12 rank 1 of 2 step {}: pieces of {} "
                                                     "framed tokens, not the rank's 64",
                                                     t.step, kStepTokens + t.count)))
      << AllProblems(report);
}

TEST(PieceAudit, RunReplayingFromTheWrongStepIsNamed) {
  // Run 1 delivers from the state of step 10 but says it started at 12: steps 11 and 12 twice.
  auto runs = MakeHistory({{0, 4, 12}, {10, 2, 24}});
  runs[1].start_step = 12;
  for (auto& rank : runs[1].ranks) {
    for (auto& t : rank) t.step += 2;
  }
  const AuditReport report = AuditTrace(runs, nullptr);
  EXPECT_FALSE(report.clean());
  EXPECT_TRUE(AnyProblemMentions(report, "delivered twice: by from-0 rank "));
  EXPECT_TRUE(AnyProblemMentions(report, "and by from-12 rank ")) << AllProblems(report);
}

TEST(PieceAudit, MissingStepIsNamedWithItsLostTokens) {
  auto runs = MakeHistory(kChain);
  auto& records = runs[0].ranks[2];
  std::erase_if(records, [](const TraceRecord& t) { return t.step == 7; });
  const AuditReport report = AuditTrace(runs, nullptr);
  EXPECT_TRUE(AnyProblemMentions(report, "from-0 rank 2 of 4: no records for step 7\n"))
      << AllProblems(report);
  EXPECT_TRUE(AnyProblemMentions(report, "never delivered")) << AllProblems(report);

  auto missing_run = MakeHistory(kChain);  // the run from 12 lost: steps 15..24 of run 0 missing
  missing_run.erase(missing_run.begin() + 1);
  const AuditReport gap = AuditTrace(missing_run, nullptr);
  for (int r = 0; r < 4; ++r) {
    EXPECT_TRUE(AnyProblemMentions(
        gap, fmt::format("from-0 rank {} of 4: no records for steps 15..24 (its trace ends "
                         "there)",
                         r)))
        << AllProblems(gap);
  }
  EXPECT_EQ(gap.runs[0].valid_end, 24u);
}

TEST(PieceAudit, SupersededStepsOfAnEarlierRunAreIgnored) {
  auto runs = MakeHistory({{0, 4, 20}, {12, 2, 30}});
  // Steps 13..20 of run 0 were replayed by run 1: even a duplicate there does not count.
  auto& records = runs[0].ranks[3];
  const auto at = std::find_if(records.begin(), records.end(),
                               [](const TraceRecord& t) { return t.step == 15; });
  records.insert(at, *at);
  const AuditReport report = AuditTrace(runs, nullptr);
  EXPECT_TRUE(report.clean()) << AllProblems(report);
  EXPECT_EQ(report.runs[0].valid_end, 12u);
  EXPECT_EQ(report.tokens, (12 * 4 + 18 * 2) * kStepTokens);
  ASSERT_EQ(report.runs[0].notes.size(), 1u);
  EXPECT_EQ(report.runs[0].notes[0], "steps 13..20 replayed by from-12: ignored");
}

TEST(PieceAudit, PartialLastStepOfAKilledLastRunIsDropped) {
  auto runs = MakeHistory(kChain);
  const size_t cut = RankWithSplitStep(runs[2], 40);
  runs[2].ranks[cut].pop_back();  // killed while writing step 40
  runs[2].partial_bytes = {0, 0, 0};
  runs[2].partial_bytes[cut] = 20;
  AuditReport report = AuditTrace(runs, nullptr);
  EXPECT_TRUE(report.clean()) << AllProblems(report);
  EXPECT_EQ(report.runs[2].valid_end, 39u);
  EXPECT_EQ(report.runs[2].recorded_end, 40u);
  EXPECT_EQ(report.tokens, (12 * 4 + 12 * 2 + 15 * 3) * kStepTokens);
  ASSERT_EQ(report.runs[2].notes.size(), 2u);
  ExpectMentions(report.runs[2].notes[0],
                 fmt::format("step 40 dropped: not recorded completely by every rank (rank {} "
                             "recorded step 40 in part (",
                             cut));
  ExpectMentions(report.runs[2].notes[1],
                 fmt::format("rank {}: its file ends in a partial record of 20 bytes", cut));

  // Another rank killed before steps 39 and 40: both dropped on every rank.
  const size_t early = (cut + 1) % 3;
  std::erase_if(runs[2].ranks[early], [](const TraceRecord& t) { return t.step >= 39; });
  report = AuditTrace(runs, nullptr);
  EXPECT_TRUE(report.clean()) << AllProblems(report);
  EXPECT_EQ(report.runs[2].valid_end, 38u);
  ExpectMentions(report.runs[2].notes[0], "steps 39..40 dropped");
  ExpectMentions(report.runs[2].notes[0], fmt::format("rank {} stops at step 38", early));
}

TEST(PieceAudit, PartialStepInsideTheHistoryIsAProblem) {
  auto runs = MakeHistory({{0, 2, 12}, {12, 2, 20}});
  const size_t cut = RankWithSplitStep(runs[0], 12);
  runs[0].ranks[cut].pop_back();  // step 12 in part, and run 0 is not the last
  const AuditReport report = AuditTrace(runs, nullptr);
  EXPECT_TRUE(AnyProblemMentions(
      report, fmt::format("from-0 rank {} of 2 step 12: recorded in part (", cut)))
      << AllProblems(report);
}

TEST(PieceAudit, BadStepsAndEmptyTracesAreProblems) {
  EXPECT_TRUE(AnyProblemMentions(AuditTrace({}, nullptr), "the trace holds no run"));
  auto runs = MakeHistory({{0, 2, 10}, {10, 2, 14}});
  runs.erase(runs.begin());  // the trace starts at step 10, in the middle of documents: excused
  AuditReport report = AuditTrace(runs, nullptr);
  EXPECT_TRUE(report.clean()) << AllProblems(report);
  ExpectMentions(report.runs[0].notes.at(0), "the trace starts at step 10");
  EXPECT_GT(runs[0].ranks[0].front().first, 0u);
  runs[0].ranks[1].front().step = 10;
  report = AuditTrace(runs, nullptr);
  EXPECT_TRUE(AnyProblemMentions(report,
                                 "from-10 rank 1 of 2: step 10 is not after the run's "
                                 "start step"))
      << AllProblems(report);
  runs = MakeHistory({{0, 1, 6}});
  std::swap(runs[0].ranks[0].front(), runs[0].ranks[0].back());  // step 6 first, then 1
  report = AuditTrace(runs, nullptr);
  EXPECT_TRUE(AnyProblemMentions(report, "from-0 rank 0 of 1: step 2 recorded after step 6"))
      << AllProblems(report);
}

TEST(PieceAudit, LargeHistoryIsCleanAndCounted) {
  const auto runs = MakeHistory({{0, 16, 600}, {500, 24, 1000}});  // about 50,000 pieces
  const AuditReport report = AuditTrace(runs, nullptr);
  EXPECT_TRUE(report.clean()) << AllProblems(report);
  EXPECT_EQ(report.tokens, (500 * 16 + 500 * 24) * kStepTokens);
  EXPECT_GT(report.pieces, 40'000u);
}

Batch BatchOf(uint64_t step, std::vector<DocPiece> pieces) {
  Batch batch;
  batch.step = step;
  batch.pieces = std::move(pieces);
  return batch;
}

TEST(PieceTrace, WrittenRecordsReadBackAndAPartialRecordIsDropped) {
  TempDir dir;
  const std::string trace = dir / "trace";
  PrepareTraceDir(trace, RecordThisRun(5, 2));
  {
    PieceTraceWriter rank0(trace, 5, 0, 2), rank1(trace, 5, 1, 2);
    rank0.Write(BatchOf(6, {{1, 7, 0, 0, 30}, {0, 2, 1, 10, 34}}));
    rank1.Write(BatchOf(6, {{0, 3, 0, 5, 64}}));
    rank0.Write(BatchOf(7, {{0, 9, 2, 0, 64}}));
  }
  {
    std::ofstream out(trace + "/from-5/rank-1-of-2.trace", std::ios::app | std::ios::binary);
    out.write("twenty partial bytes", 20);  // a record cut short by a kill
  }
  const auto runs = ReadTraceDir(trace);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].start_step, 5u);
  EXPECT_EQ(runs[0].world, 2u);
  const std::vector<TraceRecord> rank0 = {
      {6, 1, 7, 0, 0, 30}, {6, 0, 2, 1, 10, 34}, {7, 0, 9, 2, 0, 64}};
  const std::vector<TraceRecord> rank1 = {{6, 0, 3, 0, 5, 64}};
  EXPECT_EQ(runs[0].ranks, (std::vector<std::vector<TraceRecord>>{rank0, rank1}));
  EXPECT_EQ(runs[0].partial_bytes, (std::vector<uint64_t>{0, 20}));
  EXPECT_EQ(std::filesystem::file_size(trace + "/from-5/rank-0-of-2.trace"), 3u * 48);
}

TEST(PieceTrace, PrepareRemovesSupersededRunsAndReadNamesBadFolders) {
  TempDir dir;
  const std::string trace = dir / "trace";
  for (uint64_t start : {0, 8, 12, 30}) PieceTraceWriter(trace, start, 0, 1);
  std::filesystem::create_directories(trace + "/notes");
  PrepareTraceDir(trace, RecordThisRun(12, 1));  // supersedes from-12 and from-30
  const auto runs = ReadTraceDir(trace);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].start_step, 0u);
  EXPECT_EQ(runs[1].start_step, 8u);
  EXPECT_TRUE(std::filesystem::exists(trace + "/notes"));

  PieceTraceWriter(trace, 12, 0, 3);
  PieceTraceWriter(trace, 12, 2, 3);
  try {
    ReadTraceDir(trace);
    ADD_FAILURE() << "a missing rank file was not refused";
  } catch (const DataError& e) {
    ExpectMentions(e.what(), "from-12: no file for rank 1 of 3 (rank-1-of-3.trace)");
  }
  PieceTraceWriter(trace, 12, 1, 2);
  try {
    ReadTraceDir(trace);
    ADD_FAILURE() << "rank files of two world sizes were not refused";
  } catch (const DataError& e) {
    ExpectMentions(e.what(), "from-12: rank files of two world sizes");
  }
  EXPECT_THROW(ReadTraceDir(dir / "nowhere"), IoError);
}

}  // namespace
}  // namespace stoker
