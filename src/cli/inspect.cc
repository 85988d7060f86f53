// `stoker inspect PATH [--json] [--data CORPUS]`: describes what is at PATH, chosen by what PATH
// holds (rank 0 looks and tells the others):
//   a loader checkpoint step folder (it holds loader/ with rank files), or that loader/ folder:
//     rank 0 reads and checks every rank file and prints what shapes the order and how far each
//     rank and dataset has got (checkpoint/checkpoint_stats.h); --data CORPUS adds epochs done;
//   anything else is taken for a corpus folder: a table of its datasets (files, documents,
//     tokens, token type, document-length statistics) and its fingerprint (tools/corpus_stats.h).
// --json prints one JSON object instead, whose "kind" says which. Errors (a corrupt or incomplete
// checkpoint, naming the file) are raised on every rank together; the exit code is 1.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/check.h"
#include "checkpoint/checkpoint_stats.h"
#include "checkpoint/checkpoint_store.h"
#include "cli/commands.h"
#include "cli/json_text.h"
#include "tokens/token_type.h"
#include "tools/corpus_stats.h"

namespace stoker::cli {

namespace {

struct InspectArgs {
  std::string path;
  std::string data;  // --data: the corpus of a checkpoint
  bool json = false;
};

nlohmann::json LengthsJson(const LengthHistogram& h) {
  return {{"min", h.min()},           {"mean", h.mean()},          {"p50", h.Percentile(0.5)},
          {"p90", h.Percentile(0.9)}, {"p99", h.Percentile(0.99)}, {"max", h.max()}};
}

nlohmann::json CorpusJson(const CorpusStats& stats) {
  nlohmann::json datasets = nlohmann::json::object();
  for (const auto& d : stats.datasets) {
    datasets[d.name] = {{"files", d.files},           {"docs", d.docs},
                        {"tokens", d.tokens},         {"dtype", TokenTypesLabel(d.token_types)},
                        {"tokenizers", d.tokenizers}, {"doc_length", LengthsJson(d.doc_lengths)}};
  }
  return {{"kind", "corpus"},
          {"root", stats.root},
          {"fingerprint", stats.fingerprint},
          {"datasets", std::move(datasets)},
          {"total_files", stats.total_files},
          {"total_docs", stats.total_docs},
          {"total_tokens", stats.total_tokens},
          {"dtype", TokenTypesLabel(stats.token_types)},
          {"doc_length", LengthsJson(stats.doc_lengths)}};
}

nlohmann::json ProgressJson(const DatasetProgress& p) {
  nlohmann::json j = {{"started_tokens", p.started},
                      {"shards", p.shards},
                      {"epoch_min", p.epoch_min},
                      {"epoch_max", p.epoch_max},
                      {"shards_at_epoch_max", p.shards_at_max},
                      {"positions", p.positions},
                      {"unfinished_docs", p.unfinished}};
  if (p.dealt) {
    j["dealt"] = true;
    j["stream_min"] = p.stream_min;
    j["stream_max"] = p.stream_max;
  }
  if (p.docs) j["docs"] = *p.docs;
  if (p.docs_done) j["docs_done"] = *p.docs_done;
  if (const auto done = p.epochs_done()) j["epochs_done"] = *done;
  return j;
}

// [{"step": 0, "ramp": false, "weights": {"web": 0.7, ...}}, ...]
nlohmann::json ScheduleJson(const CheckpointStats& s) {
  nlohmann::json entries = nlohmann::json::array();
  for (const MixEntry& e : s.schedule.entries()) {
    nlohmann::json weights = nlohmann::json::object();
    for (size_t d = 0; d < e.weights.size(); ++d) weights[s.identity.datasets[d]] = e.weights[d];
    entries.push_back({{"step", e.step}, {"ramp", e.ramp}, {"weights", std::move(weights)}});
  }
  return entries;
}

// {"state": "whole", "shards": N}, {"state": "none"} or {"state": "unusable", "problem": ...}.
nlohmann::json CorpusRecordJson(const CheckpointStats& s) {
  if (s.corpus_record_shards) return {{"state", "whole"}, {"shards", *s.corpus_record_shards}};
  if (s.corpus_record_problem.empty()) return {{"state", "none"}};
  return {{"state", "unusable"}, {"problem", s.corpus_record_problem}};
}

nlohmann::json CheckpointJson(const CheckpointStats& s) {
  const OrderIdentity& id = s.identity;
  nlohmann::json datasets = nlohmann::json::object();
  for (size_t d = 0; d < s.datasets.size(); ++d) {
    datasets[s.datasets[d].name] = ProgressJson(s.datasets[d]);
    datasets[s.datasets[d].name]["weight"] = s.weights[d];
  }
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankProgress& r : s.ranks) {
    nlohmann::json per_dataset = nlohmann::json::object();
    for (const DatasetProgress& p : r.datasets) per_dataset[p.name] = ProgressJson(p);
    ranks.push_back({{"rank", r.rank},
                     {"file", r.file},
                     {"bytes", r.bytes},
                     {"logical_shards", {r.shards.begin, r.shards.end}},
                     {"generation", r.generation},
                     {"unfinished_docs", r.unfinished},
                     {"datasets", std::move(per_dataset)}});
  }
  return {{"kind", "checkpoint"},
          {"path", s.step_dir},
          {"format_version", s.format_version},
          {"step", s.step},
          {"world_size", s.world},
          {"run", s.run.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.run)},
          {"layout", s.layout.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.layout)},
          {"generation", s.generation},
          {"corpus_fingerprint", id.corpus_fingerprint},
          {"seed", id.seed},
          {"logical_shards", id.logical_shards},
          {"seq_len", id.seq_len},
          {"eos_id", id.eos_id},
          {"bos_id", id.bos_id ? nlohmann::json(*id.bos_id) : nlohmann::json(nullptr)},
          {"bytes", s.bytes},
          {"with_corpus", s.with_corpus},
          {"corpus_record", CorpusRecordJson(s)},
          {"schedule", ScheduleJson(s)},
          {"schedule_entry", s.schedule.EntryAt(s.step)},
          {"datasets", std::move(datasets)},
          {"ranks", std::move(ranks)}};
}

void Print(const std::string& text) {
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

int InspectCorpus(const InspectArgs& args, const mpi::Comm& world) {
  mpi::FailTogether(world, [&] {
    STOKER_CHECK(args.data.empty(), ConfigError,
                 "--data is for checkpoints, and {} is not one (no loader/ folder with rank "
                 "files)",
                 args.path);
  });
  const CorpusStats stats = CollectCorpusStats(world, args.path);
  if (world.rank() == 0) {
    Print(args.json ? JsonText(CorpusJson(stats)) + "\n" : FormatCorpusStats(stats));
  }
  return 0;
}

int InspectCheckpoint(const InspectArgs& args, const std::string& step_dir,
                      const mpi::Comm& world) {
  std::optional<CorpusTable> corpus;
  if (!args.data.empty()) corpus = DiscoverCorpus(world.get(), args.data);  // collective
  CheckpointStats stats;
  mpi::FailTogether(world, [&] {
    if (world.rank() == 0) stats = CollectCheckpointStats(step_dir, corpus ? &*corpus : nullptr);
  });
  if (world.rank() == 0) {
    Print(args.json ? JsonText(CheckpointJson(stats)) + "\n" : FormatCheckpointStats(stats));
  }
  return 0;
}

// A folder of step folders (a --checkpoint-dir) is neither a corpus nor one checkpoint: refused,
// naming the newest step, rather than reported as a corpus whose datasets hold no shards.
void RefuseCheckpointFolder(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return;  // discovery says what it is
  std::vector<StepFolder> steps = ListStepFolders(path);
  std::erase_if(steps, [&](const StepFolder& s) {
    return !std::filesystem::is_directory(s.path + "/loader", ec);
  });
  if (steps.empty()) return;
  const auto complete =
      std::find_if(steps.rbegin(), steps.rend(), [](const StepFolder& s) { return s.complete(); });
  const std::string newest =
      complete != steps.rend()
          ? fmt::format("the newest complete one is {}", complete->path)
          : fmt::format("none is complete; the newest is {}", steps.back().path);
  throw ConfigError(
      fmt::format("{} is a checkpoint folder, not a corpus or one checkpoint: it "
                  "holds {} step folders (steps {} to {}); inspect one of them: {}",
                  path, steps.size(), steps.front().step, steps.back().step, newest));
}

int RunInspect(const InspectArgs& args, const mpi::Comm& world) {
  std::string step_dir;  // empty: not a checkpoint
  mpi::FailTogether(world, [&] {
    if (world.rank() != 0) return;
    step_dir = CheckpointStepFolder(args.path).value_or("");
    if (step_dir.empty()) RefuseCheckpointFolder(args.path);
  });
  world.Broadcast(&step_dir, 0);
  if (step_dir.empty()) return InspectCorpus(args, world);
  return InspectCheckpoint(args, step_dir, world);
}

}  // namespace

Command SetupInspect(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* sub = app.add_subcommand(
      "inspect",
      "Describe a corpus or a loader checkpoint.\n"
      "A corpus folder: per dataset the shard files, documents, tokens, token type "
      "(\"mixed(...)\" when its shards differ) and document lengths in tokens (min, mean, p50, "
      "p90, p99, max; exact below 128 tokens, within 1.6% above), the totals and the corpus "
      "fingerprint. Reads only /doc_offsets, never the tokens; under mpirun the ranks read "
      "different files. A corpus that fails discovery is an error (stoker verify lists every "
      "problem).\n"
      "A checkpoint step folder (DIR/step-<N>, holding loader/rank-*.ckpt; or that loader "
      "folder): the step, world size, corpus fingerprint, seed, logical shards, seq_len, "
      "EOS/BOS it was saved with, the weight schedule it ran under (the entry in force "
      "marked) and the weights at its step; per dataset and per rank the framed tokens of "
      "the documents started, the lowest and highest epoch of the "
      "logical shards, the summed positions (documents started in the current epochs) and "
      "the documents started and not finished. Every rank file is read and checked: a "
      "missing, corrupt or mismatched file is an error naming it (exit 1); a corpus record "
      "(loader/corpus.table) that cannot be used is reported (a resume warns of it). See "
      "docs/checkpoint.md.");
  sub->add_option("path", args->path,
                  "Corpus folder (one subfolder per dataset, *.h5 shards below each), or a "
                  "loader checkpoint step folder (DIR/step-<N>), or its loader/ folder")
      ->required();
  sub->add_option("--data", args->data,
                  "For a checkpoint: its corpus folder (the fingerprints must match). Logical "
                  "shards with no documents of a dataset are then left out of the epochs, and "
                  "progress is also shown in epochs done (documents passed over in all epochs / "
                  "documents). Without it, every logical shard counts, and one holding no "
                  "documents stays at epoch 0");
  sub->add_flag(
      "--json", args->json,
      "Print one JSON object instead of the tables. For a corpus: kind \"corpus\", "
      "root, fingerprint, total_files, total_docs, total_tokens, dtype, doc_length "
      "{min, mean, p50, p90, p99, max}, and datasets: NAME -> {files, docs, tokens, "
      "dtype, tokenizers (the shards' tokenizer attributes), doc_length}. For a "
      "checkpoint: kind \"checkpoint\", path, "
      "format_version, step, world_size, run (the run identity every rank file "
      "carries; null: none, saved before stoker wrote one), layout (the parallel "
      "layout it was saved under, world_size then its dp size; null: none), generation, "
      "corpus_fingerprint, seed, "
      "logical_shards, seq_len, eos_id, bos_id (null: none), bytes, with_corpus, "
      "corpus_record {state: whole (with shards), none (saved before stoker wrote "
      "one) or unusable (with problem: corrupt, unreadable, of another corpus)}, "
      "schedule: [{step, ramp, weights: NAME -> weight}] (the weight schedule the "
      "run had), schedule_entry (the index of the entry in force at the step), "
      "datasets: NAME -> {weight (at the step), started_tokens (framed tokens "
      "of the documents started), shards, epoch_min, epoch_max, shards_at_epoch_max, "
      "positions, unfinished_docs; for a dataset dealt to the ranks dealt (true), stream_min "
      "and stream_max (where the ranks' dealing stands in its stream: the epochs are "
      "these / docs; no shard counts); and with --data docs, docs_done, epochs_done}, "
      "and "
      "ranks: [{rank, file, bytes, logical_shards [begin, end), generation, "
      "unfinished_docs, datasets: NAME -> {the same but weight}}]");
  return {sub, [args](const mpi::Comm& world) { return RunInspect(*args, world); }};
}

}  // namespace stoker::cli
