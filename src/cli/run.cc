// `stoker run --data CORPUS ...`: pulls batches from the Loader as a trainer would, until step N.
// Rank 0 shows progress and ends with one JSON line on stdout. With --dump DIR every rank writes
// each batch it delivers, before it takes the next, to DIR/rank-<r>.bin (raw little-endian int64
// rows of seq_len + 1 tokens), for tests and for checking a run's order by hand. With --trace DIR
// every rank writes the pieces of each batch it delivers, before it takes the next, to
// DIR/from-<S>/rank-<r>-of-<W>.trace (loader/piece_trace.h), for `stoker audit`.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/check.h"
#include "cli/commands.h"
#include "cli/config_file.h"
#include "cli/json_text.h"
#include "loader/piece_trace.h"
#include "os/files.h"
#include "os/posix_io.h"
#include "os/unique_fd.h"
#include "stoker/loader.h"
#include "stoker/loader_options.h"
#include "stoker/log.h"
#include "stoker/weights.h"

namespace stoker::cli {

namespace {

struct RunOptions {
  LoaderConfig config;
  std::string weights;  // parsed at run time (LoaderConfig::SetMixing)
  std::string weights_schedule;
  std::optional<int64_t> eos_id;
  std::optional<int64_t> bos_id;
  uint64_t steps = 100;
  std::string dump;
  std::string trace;           // --trace
  std::string config_file;     // --config
  std::string checkpoint_dir;  // --checkpoint-dir
  uint64_t save_every = 0;     // --save-every (0: never)
  bool resume = false;         // --resume
  bool start_over = false;     // --start-over
};

// DIR/rank-<r>.bin, created afresh; every batch goes out with write(2) before the next one is
// taken, so a run killed at any moment leaves every batch it delivered in its dump.
// Beside it, DIR/rank-<r>.pieces says what the rows are made of: per piece five little-endian
// uint64 (dataset, document, epoch, first framed position, count), for checking exactly-once.
class Dump {
 public:
  Dump(const std::string& dir, int rank)
      : tokens_path_(fmt::format("{}/rank-{}.bin", dir, rank)),
        pieces_path_(fmt::format("{}/rank-{}.pieces", dir, rank)),
        tokens_(Create(tokens_path_, dir)),
        pieces_(Create(pieces_path_, dir)) {}
  void Write(const Batch& batch) {
    std::vector<uint64_t> pieces;
    for (const DocPiece& p : batch.pieces) {
      pieces.insert(pieces.end(), {p.dataset, p.doc, p.epoch, p.first, p.count});
    }
    WriteAll(pieces_.get(), BytesOf(pieces), pieces_path_);
    WriteAll(tokens_.get(), BytesOf(batch.tokens), tokens_path_);
  }

 private:
  static UniqueFd Create(const std::string& path, const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    UniqueFd fd(posix::Open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    STOKER_CHECK(fd, IoError, "cannot create {}: {}", path, std::strerror(errno));
    return fd;
  }

  std::string tokens_path_;
  std::string pieces_path_;
  UniqueFd tokens_;
  UniqueFd pieces_;
};

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int RunRun(const RunOptions& options, const mpi::Comm& world) {
  LoaderConfig config = options.config;
  config.eos_id = options.eos_id;
  config.bos_id = options.bos_id;
  mpi::FailTogether(world, [&] {
    STOKER_CHECK(!config.data.empty(), ConfigError,
                 "--data is required: the corpus folder, on the command line or as data = "
                 "\"DIR\" in --config");
    config.SetMixing(options.weights, options.weights_schedule);
    STOKER_CHECK(!options.resume || !options.checkpoint_dir.empty(), ConfigError,
                 "--resume needs --checkpoint-dir");
    STOKER_CHECK(options.save_every == 0 || !options.checkpoint_dir.empty(), ConfigError,
                 "--save-every needs --checkpoint-dir");
    STOKER_CHECK(!options.start_over || options.save_every > 0, ConfigError,
                 "--start-over needs --checkpoint-dir and --save-every (a run that saves)");
    // Again here: CLI11's excludes() does not see keys of a --config file.
    STOKER_CHECK(!options.start_over || !options.resume, ConfigError,
                 "--resume and --start-over exclude each other");
  });
  const auto start = std::chrono::steady_clock::now();
  if (options.resume) {
    // A run that saves sets aside the newer, interrupted step folders, never to mix with them.
    const auto step_dir = options.save_every > 0
                              ? Loader::PrepareResume(world.get(), options.checkpoint_dir)
                              : Loader::FindResumeStep(world.get(), options.checkpoint_dir);
    if (step_dir) config.resume_from = *step_dir;
    if (!step_dir)
      spdlog::info("run: no checkpoint in {} yet: starting at step 0", options.checkpoint_dir);
  }
  Loader loader(world.get(), config);
  // Once the run is known to start (corpus and configuration checked): an earlier run's steps
  // are refused, or deleted with --start-over, before the first save.
  if (!options.resume && options.save_every > 0) {
    Loader::PrepareFreshStart(world.get(), options.checkpoint_dir, options.start_over);
  }
  const double startup = Since(start);
  std::optional<Dump> dump;
  if (!options.dump.empty()) dump.emplace(options.dump, world.rank());
  std::optional<PieceTraceWriter> trace;
  if (!options.trace.empty()) OpenPieceTrace(world, options.trace, loader.step(), &trace);

  const auto streaming = std::chrono::steady_clock::now();
  double waiting = 0, last_report = 0;
  uint64_t tokens = 0, step = loader.step(), batches = 0;
  while (step < options.steps) {
    const auto asked = std::chrono::steady_clock::now();
    std::optional<Batch> batch = loader.Next();
    waiting += Since(asked);
    if (!batch) break;
    step = batch->step;
    ++batches;
    tokens += batch->tokens.size();
    if (dump) dump->Write(*batch);
    if (trace) trace->Write(*batch);
    if (options.save_every > 0 && step % options.save_every == 0) {
      loader.Save(fmt::format("{}/{}", options.checkpoint_dir, "step-" + std::to_string(step)));
    }
    if (const double now = Since(streaming); now - last_report >= 5 && world.rank() == 0) {
      spdlog::info("run: step {} of {}, {:.1f} M tokens/s on this rank", step, options.steps,
                   tokens / now / 1e6);
      last_report = now;
    }
  }
  loader.WaitForSave();
  const double seconds = Since(streaming);
  const uint64_t all_tokens = world.Sum(tokens);
  const double max_wait = static_cast<double>(world.Max(static_cast<uint64_t>(waiting * 1e6)));
  if (world.rank() == 0) {
    nlohmann::json line = {
        {"ranks", world.size()},
        {"steps", step},
        {"batches", batches},
        {"tokens", all_tokens},
        {"seconds", seconds},
        {"tokens_per_second", seconds > 0 ? all_tokens / seconds : 0.0},
        {"tokens_per_second_per_rank", seconds > 0 ? all_tokens / seconds / world.size() : 0.0},
        {"startup_seconds", startup},
        {"max_wait_seconds", max_wait / 1e6},
        {"seq_len", config.seq_len},
        {"batch_size", config.batch_size}};
    std::puts(JsonText(line).c_str());
  }
  return 0;
}

}  // namespace

Command SetupRun(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  LoaderConfig& c = options->config;
  CLI::App* sub = app.add_subcommand(
      "run",
      "Stream batches from the loader as a trainer would.\n"
      "Pulls batches until step --steps. Every rank streams its "
      "own rows of seq-len + 1 tokens; together the ranks see every document once per epoch, "
      "globally shuffled, mixed by --weights. Rank 0 ends by printing one JSON line (ranks, "
      "steps, tokens of all ranks, seconds, tokens_per_second, startup and wait times).");
  sub->add_option("--config", options->config_file,
                  "Read options from a TOML or INI file (keys are the long option names, e.g. "
                  "seq-len = 2048); flags given on the command line win");
  // Not required() in CLI11: --config may give it (checked in RunRun, once the file is applied).
  sub->add_option("--data", c.data,
                  "Corpus folder (see docs/format.md); required, here or in --config");
  AddMixingOptions(sub, &options->weights, &options->weights_schedule);
  sub->add_option("--seq-len", c.seq_len, "Tokens per training sequence; rows hold seq-len + 1")
      ->capture_default_str();
  sub->add_option("--batch-size", c.batch_size, "Rows per batch on each rank")
      ->capture_default_str();
  sub->add_option("--steps", options->steps, "Stop after this global step")->capture_default_str();
  sub->add_option("--seed", c.seed, "Seed of the order (same seed, same order)")
      ->capture_default_str();
  sub->add_option("--logical-shards", c.logical_shards,
                  "Units of the order that ranks own; any rank count up to it works (a dataset "
                  "must still give every rank a document). Ranks balance within about 1% while "
                  "logical shards >= 100 x ranks. At most 16777216")
      ->capture_default_str();
  sub->add_option("--eos-id", options->eos_id,
                  "End-of-document token appended to every document (default: the corpus's "
                  "eos_id attribute, else 0)");
  sub->add_option("--bos-id", options->bos_id,
                  "Beginning-of-document token put before every document (default: none)");
  AddReadingOptions(sub, &c);
  sub->add_option("--dump", options->dump,
                  "Write every delivered batch to DIR/rank-<r>.bin (raw little-endian int64 rows "
                  "of seq-len + 1 tokens), each before the next batch is taken, and what its rows "
                  "are made of to DIR/rank-<r>.pieces (per document piece five little-endian "
                  "uint64: dataset, document, epoch, first framed position, count)");
  sub->add_option("--trace", options->trace,
                  "Write what every rank delivers, for `stoker audit DIR`: per batch, before the "
                  "next is taken, one record per document piece (step, dataset, document, epoch, "
                  "first framed position, count) to DIR/from-<S>/rank-<r>-of-<W>.trace, S being "
                  "the step the run starts from (0, or the resumed step). Traces of runs from "
                  "step S or later are removed first: they are replayed");
  sub->add_option("--checkpoint-dir", options->checkpoint_dir,
                  "Folder of checkpoints: --save-every writes DIR/step-<N>/loader/, one file per "
                  "rank; --resume goes on from the newest complete step");
  sub->add_option("--save-every", options->save_every,
                  "Save the loader's state every K global steps (0: never)")
      ->capture_default_str();
  CLI::Option* resume = sub->add_flag(
      "--resume", options->resume,
      "Go on from the newest complete step under --checkpoint-dir, on any number of "
      "ranks (no step folder yet: start at step 0; step folders none of which is complete: "
      "refused); --steps N still stops after global step N");
  sub->add_flag("--start-over", options->start_over,
                "Start at step 0 although --checkpoint-dir holds step folders of an earlier run: "
                "they are deleted first. Without it (and without --resume) such a run is refused, "
                "never overwriting them")
      ->excludes(resume);
  return {sub, [options, sub](const mpi::Comm& world) {
            if (!options->config_file.empty()) {
              mpi::FailTogether(world, [&] { ApplyConfigFile(sub, options->config_file); });
            }
            return RunRun(*options, world);
          }};
}

}  // namespace stoker::cli
