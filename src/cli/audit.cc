// `stoker audit TRACE_DIR [--data CORPUS] [--bos] [--clock-tolerance S] [--json]`: checks the
// piece traces that `stoker run --trace` (or a trainer) wrote over a chain of runs
// (loader/piece_trace.h): no step missing, no framed token delivered twice or skipped
// (audit/piece_audit.h). With --data it also checks the pieces against the corpus and counts the
// documents of each epoch delivered whole.
//
// The chain is taken as linear: each run ended before the next began. From the run records
// (from-<S>/run.json, run.clock; loader/run_record_files.h) it checks that too: two runs that
// wrote into the trace folder at the same time (a job submitted twice, with another checkpoint
// folder), one of them possibly set aside by the other (TRACE_DIR/superseded/), are a problem
// naming both, with their hosts, pids and times (audit/run_records.h). Runs without a record
// (older traces) are audited as before, with a note that this was not checked.
//
// Rank 0 does the work: it reads the traces (and, with --data, streams the /doc_offsets of the
// datasets the trace names), audits and prints; discovery of --data is collective. Errors are
// raised on every rank together. Exit code 0 when clean, 1 when there are problems or errors.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "audit/piece_audit.h"
#include "audit/run_records.h"
#include "base/check.h"
#include "base/text_table.h"
#include "cli/commands.h"
#include "cli/json_text.h"
#include "loader/piece_trace.h"
#include "loader/run_record_files.h"
#include "shard/discovery.h"
#include "shard/shard_reader.h"
#include "stoker/corpus.h"

namespace stoker::cli {

namespace {

constexpr size_t kPrintedProblems = 20;

struct AuditArgs {
  std::string trace_dir;
  std::string data;  // --data: the corpus of the runs
  bool bos = false;  // --bos: the runs framed documents with a BOS
  double clock_tolerance = kDefaultClockTolerance;  // --clock-tolerance, seconds
  bool json = false;
};

// The corpus of --data: its table, and where each shard's arrays lie (for pread).
struct Corpus {
  CorpusTable table;
  std::vector<ArrayLocations> arrays;
};

// Streams the /doc_offsets of dataset `d`: counts its non-empty documents and gives the framed
// length of each document in `named` (ascending).
void ScanDataset(const Corpus& corpus, uint32_t d, const std::vector<uint64_t>& named, bool bos,
                 uint64_t* nonempty, std::vector<uint64_t>* lengths) {
  const CorpusTable& table = corpus.table;
  const DatasetInfo& dataset = table.datasets[d];
  lengths->assign(named.size(), 0);
  size_t next = 0;  // the next document of `named` to find
  uint64_t base = 0;
  for (uint32_t s = dataset.first_shard; s < dataset.first_shard + dataset.num_shards; ++s) {
    ShardReader reader(table.root, table.shards[s], corpus.arrays[s]);
    uint64_t previous = 0;
    ForEachOffset(reader, uint64_t{1} << 20, [&](uint64_t index, uint64_t offset) {
      if (index > 0) {
        STOKER_CHECK(offset >= previous, DataError,
                     "{}: /doc_offsets[{}] = {} is below the previous offset {} (stoker verify "
                     "checks every shard)",
                     reader.path(), index, offset, previous);
        const uint64_t length = offset - previous, doc = base + index - 1;
        if (length > 0) ++*nonempty;
        for (; next < named.size() && named[next] == doc; ++next) {
          (*lengths)[next] = length == 0 ? 0 : length + (bos ? 2 : 1);
        }
      }
      previous = offset;
    });
    base += table.shards[s].docs;
  }
}

AuditCorpus CorpusFacts(const Corpus& corpus, const std::vector<TraceRun>& runs, bool bos) {
  const CorpusTable& table = corpus.table;
  AuditCorpus facts;
  facts.bos = bos;
  for (const DatasetInfo& d : table.datasets) {
    facts.names.push_back(d.name);
    facts.docs.push_back(d.docs);
  }
  facts.named_docs = DocumentsNamed(runs, facts.docs);
  facts.nonempty.assign(table.datasets.size(), 0);
  facts.framed_lengths.resize(table.datasets.size());
  for (uint32_t d = 0; d < table.datasets.size(); ++d) {
    if (facts.named_docs[d].empty()) continue;  // not delivered: not read
    ScanDataset(corpus, d, facts.named_docs[d], bos, &facts.nonempty[d], &facts.framed_lengths[d]);
  }
  return facts;
}

std::string DatasetName(const AuditCorpus* corpus, uint32_t d) {
  return corpus != nullptr && d < corpus->names.size() ? corpus->names[d] : std::to_string(d);
}

std::string StepRange(uint64_t start, uint64_t end) {
  if (end <= start) return "-";
  return end == start + 1 ? std::to_string(end) : fmt::format("{}..{}", start + 1, end);
}

std::string FormatRuns(const AuditReport& report) {
  std::vector<std::vector<std::string>> rows = {
      {"run", "ranks", "recorded", "valid", "tokens/step/rank", "pieces", "tokens"}};
  std::string notes;
  for (const RunSummary& r : report.runs) {
    rows.push_back({fmt::format("from-{}", r.start_step), std::to_string(r.world),
                    StepRange(r.start_step, r.recorded_end), StepRange(r.start_step, r.valid_end),
                    GroupThousands(r.tokens_per_step), GroupThousands(r.pieces),
                    GroupThousands(r.tokens)});
    for (const std::string& note : r.notes)
      notes += fmt::format("  from-{}: {}\n", r.start_step, note);
  }
  for (const std::string& note : report.notes) notes += fmt::format("  {}\n", note);
  return Tabulate(rows, {0}) + notes;
}

std::string FormatEpochs(const AuditReport& report, const AuditCorpus* corpus) {
  std::vector<std::vector<std::string>> rows = {{"dataset", "epoch", "documents", "tokens"}};
  if (corpus != nullptr) rows[0].insert(rows[0].end(), {"whole", "of non-empty"});
  for (const EpochSummary& e : report.epochs) {
    rows.push_back({DatasetName(corpus, e.dataset), std::to_string(e.epoch), GroupThousands(e.docs),
                    GroupThousands(e.tokens)});
    if (corpus == nullptr) continue;
    const bool known = e.dataset < corpus->nonempty.size();
    rows.back().push_back(GroupThousands(e.complete.value_or(0)));
    rows.back().push_back(known ? GroupThousands(corpus->nonempty[e.dataset]) : "-");
  }
  return Tabulate(rows, {0});
}

std::string FormatReport(const std::string& trace_dir, const AuditReport& report,
                         const AuditCorpus* corpus) {
  std::string out =
      fmt::format("{}: {} runs, {} valid steps, {} pieces, {} framed tokens checked\n\n", trace_dir,
                  report.runs.size(), GroupThousands(report.steps), GroupThousands(report.pieces),
                  GroupThousands(report.tokens));
  out += FormatRuns(report) + "\n";
  if (!report.epochs.empty()) out += FormatEpochs(report, corpus) + "\n";
  if (report.clean()) {
    return out +
           "clean: every rank has every valid step; no framed position delivered twice, "
           "none skipped\n";
  }
  out += fmt::format("{} problem{}:\n", GroupThousands(report.problem_count),
                     report.problem_count == 1 ? "" : "s");
  for (size_t i = 0; i < report.problems.size() && i < kPrintedProblems; ++i) {
    out += "  " + report.problems[i] + "\n";
  }
  if (report.problem_count > kPrintedProblems) {
    out +=
        fmt::format("  ... and {} more\n", GroupThousands(report.problem_count - kPrintedProblems));
  }
  return out;
}

nlohmann::json RecordJson(const RunRecords& records, uint64_t start_step) {
  const auto found = records.chain.find(start_step);
  if (found == records.chain.end()) return nullptr;
  const RunRecord& r = found->second;
  return {{"id", r.id},
          {"started", r.started},
          {"last_write", r.last_write ? nlohmann::json(*r.last_write) : nlohmann::json(nullptr)},
          {"host", r.host},
          {"pid", r.pid},
          {"slurm_job_id",
           r.slurm_job.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.slurm_job)}};
}

nlohmann::json RunsJson(const AuditReport& report, const RunRecords& records) {
  nlohmann::json runs = nlohmann::json::array();
  for (const RunSummary& r : report.runs) {
    runs.push_back({{"start_step", r.start_step},
                    {"world_size", r.world},
                    {"recorded_end", r.recorded_end},
                    {"valid_end", r.valid_end},
                    {"valid_steps", r.valid_end - r.start_step},
                    {"tokens_per_step", r.tokens_per_step},
                    {"pieces", r.pieces},
                    {"tokens", r.tokens},
                    {"notes", r.notes},
                    {"record", RecordJson(records, r.start_step)}});
  }
  return runs;
}

nlohmann::json DatasetsJson(const AuditReport& report, const AuditCorpus* corpus) {
  nlohmann::json datasets = nlohmann::json::object();
  for (const EpochSummary& e : report.epochs) {
    nlohmann::json& d = datasets[DatasetName(corpus, e.dataset)];
    if (corpus != nullptr && e.dataset < corpus->docs.size() && !d.contains("docs")) {
      d["docs"] = corpus->docs[e.dataset];
      d["nonempty_docs"] = corpus->nonempty[e.dataset];
    }
    nlohmann::json epoch = {{"epoch", e.epoch}, {"documents", e.docs}, {"tokens", e.tokens}};
    if (e.complete) epoch["whole_documents"] = *e.complete;
    d["epochs"].push_back(std::move(epoch));
  }
  return datasets;
}

nlohmann::json ReportJson(const std::string& trace_dir, const AuditReport& report,
                          const RunRecords& records, const AuditCorpus* corpus) {
  return {{"trace_dir", trace_dir},
          {"clean", report.clean()},
          {"runs", RunsJson(report, records)},
          {"notes", report.notes},
          {"steps", report.steps},
          {"pieces", report.pieces},
          {"tokens_checked", report.tokens},
          {"with_corpus", corpus != nullptr},
          {"datasets", DatasetsJson(report, corpus)},
          {"problem_count", report.problem_count},
          {"problems", report.problems}};
}

// Rank 0's part: read, audit, print. Returns the exit code.
int AuditOnRankZero(const AuditArgs& args, const std::optional<Corpus>& corpus) {
  std::vector<TraceRun> runs = ReadTraceDir(args.trace_dir);
  const RunRecords records = ReadRunRecords(args.trace_dir);
  std::optional<AuditCorpus> facts;
  if (corpus) facts = CorpusFacts(*corpus, runs, args.bos);
  const AuditCorpus* known = facts ? &*facts : nullptr;
  AuditReport report = AuditTrace(std::move(runs), known);
  CheckRunRecords(records, args.clock_tolerance, &report);
  const std::string text = args.json
                               ? JsonText(ReportJson(args.trace_dir, report, records, known)) + "\n"
                               : FormatReport(args.trace_dir, report, known);
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  return report.clean() ? 0 : 1;
}

int RunAudit(const AuditArgs& args, const mpi::Comm& world) {
  mpi::FailTogether(world, [&] {
    STOKER_CHECK(!args.bos || !args.data.empty(), ConfigError,
                 "--bos says how the corpus's documents were framed: it needs --data");
  });
  std::optional<Corpus> corpus;
  if (!args.data.empty()) {
    corpus.emplace();
    corpus->table = DiscoverCorpus(world, args.data, &corpus->arrays);  // collective
  }
  uint64_t exit_code = 0;
  mpi::FailTogether(world, [&] {
    if (world.rank() == 0) exit_code = AuditOnRankZero(args, corpus);
  });
  return static_cast<int>(world.Max(exit_code));
}

}  // namespace

Command SetupAudit(CLI::App& app) {
  auto args = std::make_shared<AuditArgs>();
  CLI::App* sub = app.add_subcommand(
      "audit",
      "Check piece traces: every token delivered once, none skipped.\n"
      "Checks the piece traces of a chain of runs (stoker run --trace DIR, or a trainer's): "
      "TRACE_DIR/from-<S>/rank-<r>-of-<W>.trace, one folder per run started (or resumed) at "
      "step S on W ranks. Run i counts for steps S_i+1..S_(i+1) (its later steps were replayed "
      "by the next run); the last run up to the last step every one of its ranks recorded whole "
      "(a killed run's partial last step is dropped and said so). Checks that every rank has "
      "every step, that every step holds the run's tokens, that no framed position of a "
      "(dataset, document, epoch) was delivered twice or skipped, and from the runs' records "
      "(from-<S>/run.json, run.clock) that no two runs wrote at the same time: each run's last "
      "batch came before the next run started, and before the start of a run that set it "
      "aside (TRACE_DIR/superseded/). Prints runs, steps, tokens "
      "checked, per dataset and epoch the documents and tokens delivered, and up to 20 "
      "problems. Exit code 0 when clean, 1 when there are problems. Rank 0 does the work; "
      "under mpirun only discovery of --data is shared.");
  sub->add_option("trace_dir", args->trace_dir, "The trace folder given to --trace")->required();
  sub->add_option("--data", args->data,
                  "The corpus the runs read: also checks that every document exists and that "
                  "pieces end within the document's framed length (n tokens + EOS), and counts "
                  "per epoch the documents delivered whole. Streams the /doc_offsets of every "
                  "dataset the trace names (on rank 0)");
  sub->add_flag("--bos", args->bos,
                "The runs framed documents with a BOS (they were given --bos-id): a document "
                "of n tokens is then n + 2 framed tokens, not n + 1. Needs --data");
  sub->add_option("--clock-tolerance", args->clock_tolerance,
                  "Seconds by which a run's last batch may seem to come after the next run's "
                  "start before the two count as running at the same time: the clocks of two "
                  "nodes differ (times are each run's rank 0's wall clock)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_flag(
      "--json", args->json,
      "Print one JSON object instead: clean, runs (start_step, world_size, "
      "recorded_end, valid_end, valid_steps, tokens_per_step, pieces, tokens, notes, record: "
      "id, started, last_write, host, pid, slurm_job_id, or null), notes, "
      "steps, pieces, tokens_checked, datasets (per epoch: documents, tokens, "
      "whole_documents with --data), problem_count, problems (up to 200)");
  return {sub, [args](const mpi::Comm& world) { return RunAudit(*args, world); }};
}

}  // namespace stoker::cli
