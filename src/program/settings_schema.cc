// Schema(): every setting of the programs on stoker (stoker/program/settings.h), the one place
// of its flag, variable, unit and help. Defaults are the bound fields' values (DefaultSettings).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <initializer_list>
#include <map>
#include <span>
#include <string>

#include "stoker/io_engine.h"
#include "stoker/program/settings.h"

namespace stoker::program {

namespace {

constexpr unsigned kRun = static_cast<unsigned>(Program::kRun);
constexpr unsigned kTrainer = static_cast<unsigned>(Program::kTrainer);
constexpr unsigned kBoth = kRun | kTrainer;
constexpr Sharing kOwn = Sharing::kOwn;
constexpr Sharing kLoader = Sharing::kLoader;
constexpr Sharing kSession = Sharing::kSession;
constexpr Sharing kProgram = Sharing::kProgram;

std::string Text(std::string_view view) { return std::string(view); }

// A flag with a value, its default shown as the field holds it.
template <typename T>
CLI::Option* Value(CLI::App* app, const Setting& s, T& field) {
  return app->add_option(Text(s.flag), field, Text(s.help))->capture_default_str();
}

// A flag whose value is optional (no default shown: none means the corpus's or nothing).
template <typename T>
CLI::Option* Maybe(CLI::App* app, const Setting& s, T& field) {
  return app->add_option(Text(s.flag), field, Text(s.help));
}

CLI::Option* Switch(CLI::App* app, const Setting& s, bool& field) {
  return app->add_flag(Text(s.flag), field, Text(s.help));
}

// "8MiB" for 8 << 20: the largest of GiB, MiB and KiB that divides `bytes`, as --help shows it.
std::string SizeText(uint64_t bytes) {
  for (const auto& [shift, unit] : {std::pair(30, "GiB"), {20, "MiB"}, {10, "KiB"}}) {
    if (bytes != 0 && bytes % (uint64_t{1} << shift) == 0) {
      return std::to_string(bytes >> shift) + unit;
    }
  }
  return std::to_string(bytes);
}

CLI::Option* Size(CLI::App* app, const Setting& s, uint64_t& field) {
  return app->add_option(Text(s.flag), field, Text(s.help))
      ->transform(CLI::AsSizeValue(false))
      ->default_str(SizeText(field));
}

// A number of 1 or more, or "auto" for 0 (a typed 0 is refused: it would mean auto unsaid).
CLI::Option* NumberOrAuto(CLI::App* app, const Setting& s, uint32_t& field) {
  return app->add_option(Text(s.flag), field, Text(s.help))
      ->transform(CLI::Transformer(std::map<std::string, std::string>{{"auto", "0"}}))
      ->transform(CLI::Validator(
          [](std::string& value) {
            return value == "0" ? std::string("0: give 1 or more, or auto") : std::string();
          },
          ""))
      ->default_str(field == 0 ? "auto" : std::to_string(field));
}

// One of `values` by the name `name_of` gives it (stoker/io_engine.h).
template <typename Enum, typename NameOf>
CLI::Option* Named(CLI::App* app, const Setting& s, Enum& field, std::initializer_list<Enum> values,
                   NameOf name_of) {
  std::map<std::string, Enum> names;
  for (Enum v : values) names.emplace(std::string(name_of(v)), v);
  return app->add_option(Text(s.flag), field, Text(s.help))
      ->transform(CLI::CheckedTransformer(names))
      ->default_str(std::string(name_of(field)));
}

using S = ProgramSettings;

// A trainer setting's meaning: its value (a double to round-trip, a switch as true or false).
template <auto field>
std::string Trainer(const S& v) {
  return fmt::format("{}", v.trainer.*field);
}

const Setting kData[] = {
    {"data", "--data", "CORPUS", "", "data", kBoth, kLoader, false,
     "Corpus folder (docs/format.md), e.g. one made by stoker pack; required",
     [](CLI::App* a, const Setting& s, S* v) { return Maybe(a, s, v->run.loader.data); }},
    {"weights", "--weights", "WEIGHTS", "", "data", kBoth, kLoader, true,
     "Mixing weights as NAME=W,NAME=W (relative; datasets not named are not read). Default: "
     "proportional to each dataset's tokens. May change at a resume: the new weights rule from "
     "the resumed step on",
     [](CLI::App* a, const Setting& s, S* v) { return Maybe(a, s, v->run.weights); }},
    {"weights_schedule", "--weights-schedule", "WEIGHTS_SCHEDULE", "", "data", kBoth, kLoader, true,
     "Mixing weights that change with the step: jumps as "
     "\"0:web=0.7,code=0.3;10000:web=0.5,code=0.5\" (STEP:WEIGHTS entries, ';' between them), a "
     "linear ramp to an entry as ~STEP:WEIGHTS, or a TOML or JSON file (docs/loader.md, "
     "\"Mixing\"). STEP counts the batches before: entry 10000 rules the 10,001st batch on. "
     "Instead of --weights",
     [](CLI::App* a, const Setting& s, S* v) { return Maybe(a, s, v->run.weights_schedule); }},
    {"seq_len", "--seq-len", "SEQ_LEN", "tokens", "data", kBoth, kLoader, false,
     "Tokens per training sequence (the model's context); rows hold seq-len + 1",
     [](CLI::App* a, const Setting& s, S* v) { return Value(a, s, v->run.loader.seq_len); }},
    {"batch_size", "--batch-size", "BATCH_SIZE", "rows", "data", kBoth, kOwn, false,
     "Rows (sequences) per step on each rank",
     [](CLI::App* a, const Setting& s, S* v) { return Value(a, s, v->run.loader.batch_size); }},
    {"seed", "--seed", "SEED", "", "data", kBoth, kLoader, false,
     "Seed of the data order (same seed, same order) and of a trainer's initial weights",
     [](CLI::App* a, const Setting& s, S* v) { return Value(a, s, v->run.loader.seed); }},
    {"logical_shards", "--logical-shards", "LOGICAL_SHARDS", "", "data", kBoth, kLoader, false,
     "Units of the order that ranks own; any rank count up to it works (a dataset must still "
     "give every rank a document). Ranks balance within about 1% while logical shards >= 100 x "
     "ranks. At most 16777216",
     [](CLI::App* a, const Setting& s, S* v) { return Value(a, s, v->run.loader.logical_shards); }},
    {"deal_max_docs", "--deal-max-docs", "DEAL_MAX_DOCS", "documents", "data", kBoth, kLoader,
     false,
     "A dataset of at most this many documents is dealt to the ranks: its epochs are the "
     "dataset's over all ranks together (no document seen a (k+2)-th time before every other "
     "one k times), at any rank count; every rank holds each of its documents' sizes (8 bytes "
     "each). A larger one is walked through each rank's logical shards, its epochs theirs. 0: "
     "none dealt. Fixed by the run that starts at step 0: a resume follows its checkpoint "
     "(docs/loader.md, \"Epochs: dealt and walked\")",
     [](CLI::App* a, const Setting& s, S* v) { return Value(a, s, v->run.loader.deal_max_docs); }},
    {"layout", "--layout", "LAYOUT", "", "data", kBoth, kLoader, true,
     "The parallel layout of a job that splits its model: sizes in rank order, the first "
     "varying fastest as Megatron numbers ranks, e.g. tp=2,cp=2,pp=2 (dp left out: the rest of "
     "the ranks) or tp=2,cp=2,dp=4,pp=2. The ranks of one model replica (one dp coordinate) "
     "get the same batches, each context-parallel rank its part of every row (--seq-len a "
     "multiple of 2 x cp); step folders and traces hold a file per data-parallel rank "
     "(docs/loader.md, \"Parallel layouts\"). Default: every rank a replica of its own, or the "
     "layout of --tensor-parallel, --context-parallel and --pipeline-parallel",
     [](CLI::App* a, const Setting& s, S* v) { return Maybe(a, s, v->run.loader.layout); }},
    {"tensor_parallel", "--tensor-parallel", "TENSOR_PARALLEL", "ranks", "data", kBoth, kLoader,
     false,
     "Tensor-parallel size: with --context-parallel and --pipeline-parallel, the layout "
     "tp=T,cp=C,pp=P in Megatron's rank order (tp fastest, dp the rest of the ranks, before pp); "
     "instead of --layout",
     [](CLI::App* a, const Setting& s, S* v) { return Value(a, s, v->run.tensor_parallel); }},
    {"context_parallel", "--context-parallel", "CONTEXT_PARALLEL", "ranks", "data", kBoth, kLoader,
     false,
     "Context-parallel size: each of its ranks takes 2 of 2 x C chunks of every row (--seq-len "
     "a multiple of 2 x C); see --tensor-parallel",
     [](CLI::App* a, const Setting& s, S* v) { return Value(a, s, v->run.context_parallel); }},
    {"pipeline_parallel", "--pipeline-parallel", "PIPELINE_PARALLEL", "ranks", "data", kBoth,
     kLoader, false, "Pipeline-parallel size (stages); see --tensor-parallel",
     [](CLI::App* a, const Setting& s, S* v) { return Value(a, s, v->run.pipeline_parallel); }},
    {"replica_feed", "--replica-feed", "REPLICA_FEED", "", "data", kBoth, kLoader, false,
     "With --layout, how the ranks of a replica get its batches: broadcast (its first rank reads "
     "them and broadcasts each a step ahead) or read (every rank reads them itself)",
     [](CLI::App* a, const Setting& s, S* v) {
       return Named(a, s, v->run.loader.replica_feed,
                    {ReplicaFeed::kBroadcast, ReplicaFeed::kReadEach}, ReplicaFeedName);
     }},
    {"fields_by_stage", "--fields-by-stage", "", "", "data", kRun, kLoader, false,
     "With --layout and pp > 1, each pipeline stage takes only what it uses: the first the rows "
     "and the fields of the inputs, the last the rows and the loss mask, the stages between "
     "nothing (no read, no broadcast)",
     [](CLI::App* a, const Setting& s, S* v) {
       return Switch(a, s, v->run.loader.fields_by_stage);
     }},
    {"eos_id", "--eos-id", "EOS_ID", "", "data", kBoth, kLoader, false,
     "End-of-document token appended to every document (default: the corpus's eos_id attribute, "
     "else 0)",
     [](CLI::App* a, const Setting& s, S* v) { return Maybe(a, s, v->run.loader.eos_id); }},
    {"bos_id", "--bos-id", "BOS_ID", "", "data", kBoth, kLoader, false,
     "Beginning-of-document token put before every document (default: none)",
     [](CLI::App* a, const Setting& s, S* v) { return Maybe(a, s, v->run.loader.bos_id); }},
};

const Setting kReading[] = {
    {"prefetch", "--prefetch", "PREFETCH", "batches", "reading", kBoth, kOwn, false,
     "Finished batches each rank keeps ready for the trainer. With the batches being read "
     "(--read-ahead) they must fit in half the memory a rank may use (RAM, cgroup limit, "
     "ulimit -v): checked before anything is allocated",
     [](CLI::App* a, const Setting& s, S* v) { return Value(a, s, v->run.loader.prefetch); }},
    {"read_ahead_bytes", "--read-ahead", "READ_AHEAD", "bytes", "reading", kBoth, kOwn, false,
     "Bytes of batches (int64 tokens) each rank reads at once beyond the finished ones; suffixes "
     "KiB, MiB, GiB. One batch is read ahead whatever it is (0 or less than a batch: one). "
     "Enough to keep --io-depth reads busy",
     [](CLI::App* a, const Setting& s, S* v) {
       return Size(a, s, v->run.loader.read_ahead_bytes);
     }},
    {"offset_cache_bytes", "--offset-cache", "OFFSET_CACHE", "bytes", "reading", kBoth, kOwn, false,
     "Bytes of document offsets each rank keeps cached, in 4 KiB blocks of the shards' offset "
     "arrays; suffixes KiB, MiB, GiB. At most half of it holds the blocks read ahead for the "
     "next batches: a corpus of short documents read cold wants more (docs/loader.md, \"Reading "
     "from storage\")",
     [](CLI::App* a, const Setting& s, S* v) {
       return Size(a, s, v->run.loader.offset_cache_bytes);
     }},
    {"io_depth", "--io-depth", "IO_DEPTH", "reads", "reading", kBoth, kOwn, false,
     "Reads each rank keeps in flight (1 to 4096), or auto: 128 per node, shared by the node's "
     "ranks (at least 16 each), which keeps a local or cloud disk and a parallel file system "
     "(Lustre, GPFS, a millisecond a read) busy without overfilling a disk's queue when many "
     "ranks share it",
     [](CLI::App* a, const Setting& s, S* v) {
       return NumberOrAuto(a, s, v->run.loader.io_depth);
     }},
    {"io_engine", "--io-engine", "IO_ENGINE", "", "reading", kBoth, kOwn, false,
     "What keeps the reads in flight: uring (io_uring), threads (a pool of reader threads), or "
     "auto: io_uring where the kernel allows it, else threads",
     [](CLI::App* a, const Setting& s, S* v) {
       return Named(a, s, v->run.loader.io_engine,
                    {IoEngine::kAuto, IoEngine::kUring, IoEngine::kThreads}, IoEngineName);
     }},
    {"direct_io", "--direct-io", "DIRECT_IO", "", "reading", kBoth, kOwn, false,
     "Whether token reads bypass the page cache (O_DIRECT): on, off, or auto: on when the corpus "
     "is larger than the memory a rank may use, since the cache could not keep it and filling "
     "it costs the kernel time on every read",
     [](CLI::App* a, const Setting& s, S* v) {
       return Named(a, s, v->run.loader.direct_io, {DirectIo::kAuto, DirectIo::kOn, DirectIo::kOff},
                    DirectIoName);
     }},
};

const Setting kModel[] = {
    {"vocab", "--vocab", "", "tokens", "model", kTrainer, kProgram, false,
     "Vocabulary size (token ids must be below it); 0: the corpus's vocab_size attribute (258 "
     "for stoker pack's byte tokenizer)",
     [](CLI::App* a, const Setting& s, S* v) { return Value(a, s, v->trainer.vocab); },
     Trainer<&TrainerSettings::vocab>},
    {"dim", "--dim", "", "", "model", kTrainer, kProgram, false, "Model width",
     [](CLI::App* a, const Setting& s, S* v) { return Value(a, s, v->trainer.dim); },
     Trainer<&TrainerSettings::dim>},
    {"layers", "--layers", "", "", "model", kTrainer, kProgram, false, "Transformer blocks",
     [](CLI::App* a, const Setting& s, S* v) { return Value(a, s, v->trainer.layers); },
     Trainer<&TrainerSettings::layers>},
    {"heads", "--heads", "", "", "model", kTrainer, kProgram, false,
     "Attention heads (must divide --dim)",
     [](CLI::App* a, const Setting& s, S* v) { return Value(a, s, v->trainer.heads); },
     Trainer<&TrainerSettings::heads>},
    {"lr", "--lr", "", "", "model", kTrainer, kProgram, false,
     "AdamW's learning rate after warm-up",
     [](CLI::App* a, const Setting& s, S* v) { return Value(a, s, v->trainer.lr); },
     Trainer<&TrainerSettings::lr>},
    {"warmup", "--warmup", "", "steps", "model", kTrainer, kProgram, false,
     "Steps of linear learning-rate warm-up from step 0",
     [](CLI::App* a, const Setting& s, S* v) { return Value(a, s, v->trainer.warmup); },
     Trainer<&TrainerSettings::warmup>},
    {"clip", "--clip", "", "", "model", kTrainer, kProgram, false,
     "Clip the gradient norm to this (0: no clipping)",
     [](CLI::App* a, const Setting& s, S* v) { return Value(a, s, v->trainer.clip); },
     Trainer<&TrainerSettings::clip>},
    {"doc_mask", "--doc-mask", "", "", "model", kTrainer, kProgram, false,
     "Attend only within each document (block-diagonal causal attention from the loader's "
     "segment_ids) and count positions from each document's first token (its position_ids, "
     "restarting at each row too); off: plain causal attention over the whole row, positions 0 "
     "to --seq-len - 1",
     [](CLI::App* a, const Setting& s, S* v) { return Switch(a, s, v->trainer.doc_mask); },
     Trainer<&TrainerSettings::doc_mask>},
};

const Setting kRunSettings[] = {
    {"steps", "--steps", "STEPS", "steps", "run", kBoth, kSession, false,
     "Stop after this global step",
     [](CLI::App* a, const Setting& s, S* v) { return Value(a, s, v->run.steps); }},
    {"checkpoint_dir", "--checkpoint-dir", "CHECKPOINT_DIR", "", "run", kBoth, kSession, false,
     "Folder of checkpoints (shared storage on a cluster): DIR/step-<N>/ holds the loader's "
     "files (loader/, one per rank) and a trainer's beside them; --resume goes on from the "
     "newest complete step",
     [](CLI::App* a, const Setting& s, S* v) { return Maybe(a, s, v->run.checkpoint_dir); }},
    {"save_every", "--save-every", "SAVE_EVERY", "steps", "run", kBoth, kSession, false,
     "Save a step folder every K global steps (0: none on a schedule). The trainers also save "
     "their last step and the step a stop signal ends the run at",
     [](CLI::App* a, const Setting& s, S* v) { return Value(a, s, v->run.save_every); }},
    {"resume", "--resume", "", "", "run", kBoth, kSession, false,
     "Go on from the newest complete step under --checkpoint-dir, on any number of ranks (the "
     "loader rescales its state); no step folder yet: start at step 0; step folders none of "
     "which is complete: refused. --steps N still stops after global step N. Safe to pass always",
     [](CLI::App* a, const Setting& s, S* v) { return Switch(a, s, v->run.resume); }},
    {"start_over", "--start-over", "", "", "run", kBoth, kSession, false,
     "Start at step 0 although --checkpoint-dir holds step folders of an earlier run: they are "
     "deleted first. Without it (and without --resume) such a run is refused, never overwriting "
     "them",
     [](CLI::App* a, const Setting& s, S* v) { return Switch(a, s, v->run.start_over); }},
    {"trace_dir", "--trace", "TRACE_DIR", "", "run", kBoth, kSession, true,
     "Write what every rank delivers, for `stoker audit DIR`: per batch, before the next is "
     "taken, one record per document piece (step, dataset, document, epoch, first framed "
     "position, count) to DIR/from-<S>/rank-<r>-of-<W>.trace, S being the step the run starts "
     "from (0, or the resumed step). Traces of runs from step S or later are set aside first: "
     "they are replayed",
     [](CLI::App* a, const Setting& s, S* v) { return Maybe(a, s, v->run.trace_dir); }},
    {"result_file", "--result", "RESULT_FILE", "", "run", kBoth, kOwn, true,
     "Also append the JSON object of the result line to FILE as one line (rank 0), also when a "
     "signal stopped the run early (stopped_early, end_step): the runs of a requeued job each "
     "add theirs. A FILE that cannot be written is an error before the run starts (exit 2)",
     [](CLI::App* a, const Setting& s, S* v) { return Maybe(a, s, v->run.result_file); }},
    {"log_every", "--log-every", "", "steps", "run", kTrainer, kProgram, false,
     "Log step, loss, tokens/s and data-wait share every K steps (0: never)",
     [](CLI::App* a, const Setting& s, S* v) { return Value(a, s, v->trainer.log_every); },
     Trainer<&TrainerSettings::log_every>},
    {"ready_file", "--ready-file", "", "", "run", kTrainer, kOwn, false,
     "Rank 0 creates FILE once every rank has started and can take SIGUSR1 or SIGTERM: a job "
     "script holds a stop signal until then (jobs/common.sh), since one sent earlier can reach a "
     "rank before it could catch it, or no rank at all",
     [](CLI::App* a, const Setting& s, S* v) { return Maybe(a, s, v->run.ready_file); }},
    {"dump", "--dump", "", "", "run", kRun, kOwn, false,
     "Write every delivered batch to DIR/rank-<r>.bin (raw little-endian int64 rows of seq-len "
     "+ 1 tokens), each before the next batch is taken, and what its rows are made of to "
     "DIR/rank-<r>.pieces (per document piece five little-endian uint64: dataset, document, "
     "epoch, first framed position, count)",
     [](CLI::App* a, const Setting& s, S* v) { return Maybe(a, s, v->dump); }},
    {"config", "--config", "", "", "run", kRun, kOwn, false,
     "Read settings from a TOML or INI file (keys are the long option names, e.g. seq-len = "
     "2048); the command line and the environment win over it",
     [](CLI::App* a, const Setting& s, S* v) { return Maybe(a, s, v->config_file); }},
    {"check", "--check", "", "", "run", kTrainer, kOwn, false,
     "Check the settings and exit, starting nothing (no MPI: run it without mpirun): 0 when "
     "they are right, 2 naming each wrong one; on stdout each setting that has a variable, as "
     "NAME=VALUE. Job scripts run it first",
     [](CLI::App* a, const Setting& s, S* v) { return Switch(a, s, v->check); }},
};

}  // namespace

const std::vector<Setting>& Schema() {
  static const std::vector<Setting> schema = [] {
    std::vector<Setting> all;
    for (const auto& group :
         {std::span<const Setting>(kData), std::span<const Setting>(kReading),
          std::span<const Setting>(kModel), std::span<const Setting>(kRunSettings)}) {
      all.insert(all.end(), group.begin(), group.end());
    }
    return all;
  }();
  return schema;
}

const Setting* FindSetting(std::string_view flag) {
  for (const Setting& setting : Schema()) {
    if (setting.flag == flag) return &setting;
  }
  return nullptr;
}

std::vector<std::pair<std::string, std::string>> ProgramShared(const ProgramSettings& settings,
                                                               Program program) {
  std::vector<std::pair<std::string, std::string>> shared;
  for (const Setting& setting : Schema()) {
    if (setting.sharing == Sharing::kProgram && setting.TakenBy(program)) {
      shared.emplace_back(setting.name, setting.meaning(settings));
    }
  }
  return shared;
}

}  // namespace stoker::program
