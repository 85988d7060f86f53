#include "checkpoint/checkpoint_stats.h"

#include <algorithm>
#include <filesystem>

#include "base/check.h"
#include "base/text_table.h"
#include "checkpoint/checkpoint_step.h"
#include "checkpoint/checkpoint_store.h"
#include "checkpoint/corpus_record_file.h"
#include "packing/row_planner.h"

namespace stoker {

namespace fs = std::filesystem;

namespace {

bool HoldsRankFiles(const fs::path& folder) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".ckpt") || name.ends_with(".ckpt.tmp")) return true;
  }
  return false;
}

bool IsStepName(const std::string& name) {
  return name.size() > 5 && name.starts_with("step-") &&
         std::all_of(name.begin() + 5, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Counts one more logical shard, in `epoch`.
void AddShard(uint64_t epoch, DatasetProgress* p) {
  if (p->shards == 0 || epoch > p->epoch_max) {
    p->epoch_max = epoch;
    p->shards_at_max = 0;
  }
  if (p->shards == 0 || epoch < p->epoch_min) p->epoch_min = epoch;
  if (epoch == p->epoch_max) ++p->shards_at_max;
  ++p->shards;
}

// A dealt dataset's epochs and documents done, from its stream positions, given its documents.
void SetStreamEpochs(DatasetProgress* p) {
  if (!p->docs || *p->docs == 0) return;
  p->epoch_min = p->stream_min / *p->docs;
  p->epoch_max = p->stream_max / *p->docs;
  p->docs_done = p->stream_min;
}

// Adds one rank's progress in a dataset to the total over all ranks.
void Merge(const DatasetProgress& rank, DatasetProgress* total) {
  if (rank.dealt) {  // one stream: where the ranks stand in it
    total->stream_min =
        total->dealt ? std::min(total->stream_min, rank.stream_min) : rank.stream_min;
    total->stream_max =
        total->dealt ? std::max(total->stream_max, rank.stream_max) : rank.stream_max;
    total->dealt = true;
    total->docs = rank.docs;
    SetStreamEpochs(total);
    total->started += rank.started;
    total->unfinished += rank.unfinished;
    return;
  }
  if (rank.shards > 0) {
    if (total->shards == 0 || rank.epoch_max > total->epoch_max) {
      total->epoch_max = rank.epoch_max;
      total->shards_at_max = 0;
    }
    if (total->shards == 0 || rank.epoch_min < total->epoch_min) total->epoch_min = rank.epoch_min;
    if (rank.epoch_max == total->epoch_max) total->shards_at_max += rank.shards_at_max;
    total->shards += rank.shards;
  }
  total->started += rank.started;
  total->positions += rank.positions;
  total->unfinished += rank.unfinished;
  if (rank.docs) total->docs = total->docs.value_or(0) + *rank.docs;
  if (rank.docs_done) total->docs_done = total->docs_done.value_or(0) + *rank.docs_done;
}

// Dataset `d`'s progress over the logical shards of one rank file.
DatasetProgress Progress(const RankCheckpoint& c, uint32_t d, const std::string& path,
                         std::optional<uint64_t> docs) {
  const RankState& s = c.state;
  DatasetProgress p{.name = c.identity.datasets[d], .started = s.lane.started[d]};
  for (const UnfinishedDoc& u : s.unfinished) p.unfinished += u.dataset == d;
  for (const OpenUnit& open : s.lane.open) p.unfinished += open.unit.dataset == d;
  const std::vector<uint64_t>& redeal = d < s.redeal.size() ? s.redeal[d] : std::vector<uint64_t>{};
  p.dealt = DealtIn(s)[d];
  if (p.dealt) {
    p.stream_min = redeal.empty() ? s.lane.dealers[d].position
                                  : *std::min_element(redeal.begin(), redeal.end());
    p.stream_max = redeal.empty() ? p.stream_min : *std::max_element(redeal.begin(), redeal.end());
    p.docs = docs;
    SetStreamEpochs(&p);
    return p;
  }
  if (docs) p.docs = p.docs_done = 0;
  for (uint64_t j = s.shards.begin; j < s.shards.end; ++j) {
    const ShardCursor& cursor = s.cursor(j, d);
    if (docs) {
      const uint64_t slice = SplitRange(*docs, c.identity.logical_shards, j).size();
      if (slice == 0) continue;
      STOKER_CHECK(cursor.position < slice, DataError,
                   "{}: logical shard {} of dataset {} stands at position {} of a slice of {} "
                   "documents",
                   path, j, p.name, cursor.position, slice);
      *p.docs += slice;
      *p.docs_done += cursor.epoch * slice + cursor.position;
    }
    AddShard(cursor.epoch, &p);
    p.positions += cursor.position;
  }
  return p;
}

RankProgress RankProgressOf(const RankCheckpoint& c, const std::string& path,
                            const std::optional<std::vector<uint64_t>>& dataset_docs) {
  RankProgress rank{.rank = c.rank,
                    .file = path,
                    .bytes = fs::file_size(path),
                    .shards = c.state.shards,
                    .generation = c.state.generation,
                    .unfinished = c.state.unfinished.size() + c.state.lane.open.size()};
  for (uint32_t d = 0; d < c.identity.datasets.size(); ++d) {
    std::optional<uint64_t> docs;
    if (dataset_docs) docs = (*dataset_docs)[d];
    rank.datasets.push_back(Progress(c, d, path, docs));
  }
  return rank;
}

}  // namespace

std::optional<double> DatasetProgress::epochs_done() const {
  if (!docs || !docs_done || *docs == 0) return std::nullopt;
  return static_cast<double>(*docs_done) / static_cast<double>(*docs);
}

std::optional<std::string> CheckpointStepFolder(const std::string& path) {
  fs::path p = fs::absolute(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // a trailing '/'
  std::error_code ec;
  if (!fs::is_directory(p, ec)) return std::nullopt;
  if (fs::is_directory(p / "loader", ec) &&
      (IsStepName(p.filename().string()) || HoldsRankFiles(p / "loader"))) {
    return path;
  }
  if (p.filename() == "loader" && HoldsRankFiles(p)) return p.parent_path().string();
  return std::nullopt;
}

CheckpointStats CollectCheckpointStats(const std::string& step_dir, const CorpusTable* corpus) {
  const CheckpointStep step = OpenCheckpointStep(step_dir);
  std::optional<std::vector<uint64_t>> dataset_docs;
  if (corpus != nullptr) {
    STOKER_CHECK(corpus->fingerprint == step.identity.corpus_fingerprint &&
                     corpus->datasets.size() == step.identity.datasets.size(),
                 ConfigError,
                 "corpus {} (fingerprint {}) is not the corpus checkpoint {} was saved from "
                 "(fingerprint {}):\n  {}",
                 corpus->root, corpus->fingerprint, step_dir, step.identity.corpus_fingerprint,
                 CorpusChangeNote(step_dir, step.identity.corpus_fingerprint, *corpus));
    dataset_docs.emplace();
    for (const DatasetInfo& d : corpus->datasets) dataset_docs->push_back(d.docs);
  }
  CheckpointStats stats{.step_dir = step_dir,
                        .format_version = CheckpointVersion(step.run),
                        .step = step.step,
                        .world = step.world,
                        .identity = step.identity,
                        .run = step.run,
                        .layout = step.layout,
                        .weights = step.weights,
                        .schedule = step.schedule,
                        .with_corpus = corpus != nullptr};
  const CorpusRecordCheck record = CheckCorpusRecord(step_dir, step.identity.corpus_fingerprint);
  if (record.record) stats.corpus_record_shards = record.record->shards.size();
  stats.corpus_record_problem = record.problem;
  for (const std::string& name : step.identity.datasets) stats.datasets.push_back({.name = name});
  for (uint64_t r = 0; r < step.world; ++r) {
    RankProgress rank = RankProgressOf(ReadStepRank(step, r),
                                       CheckpointPath(step_dir, r, step.world), dataset_docs);
    stats.bytes += rank.bytes;
    stats.generation = std::max(stats.generation, rank.generation);
    for (size_t d = 0; d < rank.datasets.size(); ++d) Merge(rank.datasets[d], &stats.datasets[d]);
    stats.ranks.push_back(std::move(rank));
  }
  return stats;
}

namespace {

std::vector<std::string> Header(bool with_corpus) {
  std::vector<std::string> header = {"started tokens", "epochs", "top-epoch shards", "positions",
                                     "unfinished"};
  if (with_corpus) header.insert(header.end(), {"documents", "epochs done"});
  return header;
}

// "3" or "3-5".
std::string Span(uint64_t least, uint64_t most) {
  return least == most ? GroupThousands(least)
                       : fmt::format("{}-{}", GroupThousands(least), GroupThousands(most));
}

std::vector<std::string> Cells(const DatasetProgress& p, bool with_corpus) {
  std::vector<std::string> cells;
  if (p.dealt) {
    cells = {GroupThousands(p.started),
             p.docs.value_or(0) == 0 ? "-" : Span(p.epoch_min, p.epoch_max), "dealt",
             "stream " + Span(p.stream_min, p.stream_max), GroupThousands(p.unfinished)};
  } else {
    cells = {GroupThousands(p.started), p.shards == 0 ? "-" : Span(p.epoch_min, p.epoch_max),
             fmt::format("{} of {}", GroupThousands(p.shards_at_max), GroupThousands(p.shards)),
             GroupThousands(p.positions), GroupThousands(p.unfinished)};
  }
  if (with_corpus) {
    const auto done = p.epochs_done();
    cells.push_back(GroupThousands(p.docs.value_or(0)));
    cells.push_back(done ? fmt::format("{:.4f}", *done) : "-");
  }
  return cells;
}

std::string CorpusRecordLine(const CheckpointStats& s) {
  if (s.corpus_record_shards) {
    return fmt::format("corpus record: {} shards\n", GroupThousands(*s.corpus_record_shards));
  }
  if (s.corpus_record_problem.empty()) {
    return "corpus record: none (saved before stoker wrote one)\n";
  }
  return fmt::format(
      "corpus record UNUSABLE: {}\n  (the step resumes, but were the corpus to change, a resume "
      "could not name the files that differ)\n",
      s.corpus_record_problem);
}

std::string IdentityLines(const CheckpointStats& s) {
  const OrderIdentity& id = s.identity;
  std::string out =
      fmt::format("checkpoint {}\nloader state after step {}, saved by {} ranks (file format {})\n",
                  s.step_dir, s.step, s.world, s.format_version);
  out += s.run.empty() ? "run identity: none (saved before stoker wrote one)\n"
                       : fmt::format("run identity {}\n", s.run);
  if (!s.layout.empty()) {
    out += fmt::format("parallel layout {}: a rank file per data-parallel rank\n", s.layout);
  }
  out += fmt::format("corpus fingerprint {}; datasets {}\n", id.corpus_fingerprint,
                     fmt::join(id.datasets, ", "));
  out += fmt::format("seed {}; {} logical shards; seq_len {}; eos_id {}; bos_id {}\n", id.seed,
                     GroupThousands(id.logical_shards), id.seq_len, id.eos_id,
                     id.bos_id ? fmt::format("{}", *id.bos_id) : "none");
  out += fmt::format("generation {} (rescales so far); {} rank files, {} bytes\n", s.generation,
                     s.world, GroupThousands(s.bytes));
  return out + CorpusRecordLine(s);
}

// The weight schedule, an entry a line, the one in force marked: "> step 1,000  ramp  web 0.5".
std::string ScheduleLines(const CheckpointStats& s) {
  const std::vector<MixEntry>& entries = s.schedule.entries();
  const size_t now = s.schedule.EntryAt(s.step);
  const bool ramping = now + 1 < entries.size() && entries[now + 1].ramp;
  std::string out = fmt::format("weight schedule: {} entries; at step {} entry {} is in force{}\n",
                                entries.size(), s.step, now + 1,
                                ramping ? fmt::format(", ramping to entry {}", now + 2) : "");
  std::vector<std::vector<std::string>> rows = {{"", "from step", "change"}};
  rows[0].insert(rows[0].end(), s.identity.datasets.begin(), s.identity.datasets.end());
  for (size_t k = 0; k < entries.size(); ++k) {
    rows.push_back(
        {k == now ? ">" : "", GroupThousands(entries[k].step), entries[k].ramp ? "ramp" : "jump"});
    for (double w : entries[k].weights) rows.back().push_back(fmt::format("{:.4f}", w));
  }
  return out + Tabulate(rows, {0, 2});
}

}  // namespace

std::string FormatCheckpointStats(const CheckpointStats& s) {
  std::string out = IdentityLines(s) + ScheduleLines(s);
  const std::vector<std::string> header = Header(s.with_corpus);
  std::vector<std::vector<std::string>> rows = {{"dataset", "weight"}};
  rows[0].insert(rows[0].end(), header.begin(), header.end());
  for (size_t d = 0; d < s.datasets.size(); ++d) {
    rows.push_back({s.datasets[d].name, fmt::format("{:.4f}", s.weights[d])});
    const auto cells = Cells(s.datasets[d], s.with_corpus);
    rows.back().insert(rows.back().end(), cells.begin(), cells.end());
  }
  out += "\nper dataset, over all ranks\n" + Tabulate(rows, {0});

  rows = {{"rank", "logical shards", "dataset"}};
  rows[0].insert(rows[0].end(), header.begin(), header.end());
  for (const RankProgress& r : s.ranks) {
    for (size_t d = 0; d < r.datasets.size(); ++d) {
      rows.push_back({d == 0 ? fmt::format("{}", r.rank) : "",
                      d == 0 ? fmt::format("[{}, {})", r.shards.begin, r.shards.end) : "",
                      r.datasets[d].name});
      const auto cells = Cells(r.datasets[d], s.with_corpus);
      rows.back().insert(rows.back().end(), cells.begin(), cells.end());
    }
  }
  out += "\nper rank\n" + Tabulate(rows, {1, 2});
  out +=
      "\nweight: at the saved step; started tokens: framed tokens (EOS, and BOS if any, "
      "included) of the documents started, unfinished ones whole; after a rescale a rank holds "
      "its share of the sum\nepochs: lowest-highest of the logical shards; top-epoch shards: those "
      "in the "
      "highest; positions: documents started or passed over in the shards' current epochs "
      "(format 5; before, those finished); unfinished: documents started and not finished "
      "(cut by a row's end, or left while due ones went first)\n";
  out += s.with_corpus
             ? "shards with no documents of a dataset are left out; epochs done: documents "
               "passed over in all epochs / documents\n"
             : "every logical shard counts, and one with no documents of a dataset stays at "
               "epoch 0; give the corpus (--data) to leave those out and to see epochs done\n";
  return out;
}

}  // namespace stoker
