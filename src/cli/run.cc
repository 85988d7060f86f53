// `stoker run --data CORPUS ...`: pulls batches from the Loader as a trainer would, until step N.
// Rank 0 shows progress and ends with one JSON line on stdout. With --dump DIR every rank writes
// each batch it delivers, before it takes the next, to DIR/rank-<r>.bin (raw little-endian int64
// rows of seq_len + 1 tokens), for tests and for checking a run's order by hand. With --trace DIR
// every rank writes the pieces of each batch it delivers, before it takes the next, to
// DIR/from-<S>/rank-<r>-of-<W>.trace (stoker/trace.h), for `stoker audit`. The run session
// (stoker/run_session.h) holds the rest of the job: settings checked, resume, saves, result.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
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
#include "os/files.h"
#include "os/posix_io.h"
#include "os/unique_fd.h"
#include "stoker/loader.h"
#include "stoker/loader_options.h"
#include "stoker/log.h"
#include "stoker/run_session.h"
#include "stoker/weights.h"

namespace stoker::cli {

namespace {

// stoker run's own defaults differ from a trainer's: a shorter run that saves only when asked.
struct RunOptions {
  RunSettings run{.steps = 100, .save_every = 0, .save_last = false};
  std::optional<int64_t> eos_id;
  std::optional<int64_t> bos_id;
  std::string dump;
  std::string config_file;  // --config
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

int RunRun(const RunOptions& options, const mpi::Comm& world) {
  RunSettings settings = options.run;
  settings.loader.eos_id = options.eos_id;
  settings.loader.bos_id = options.bos_id;
  // Again here: CLI11's needs() does not see keys of a --config file.
  mpi::FailTogether(world, [&] {
    STOKER_CHECK(settings.save_every == 0 || !settings.checkpoint_dir.empty(), ConfigError,
                 "--save-every needs --checkpoint-dir");
  });
  if (!CheckRunSettings(world.get(), settings, nullptr, "stoker run")) return 2;
  RunSession session(world.get(), settings, {.tag = "run"});
  Loader loader(world.get(), session.loader_config());
  session.Start(loader);
  std::optional<Dump> dump;
  if (!options.dump.empty()) dump.emplace(options.dump, world.rank());

  double last_report = 0;
  uint64_t tokens = 0, batches = 0;
  while (session.Running()) {
    const Batch batch = session.Next();
    ++batches;
    tokens += batch.tokens.size();
    if (dump) dump->Write(batch);
    session.EndStep(false, nullptr);
    if (const double now = session.seconds(); now - last_report >= 5 && world.rank() == 0) {
      spdlog::info("run: step {} of {}, {:.1f} M tokens/s on this rank", batch.step,
                   settings.steps, tokens / now / 1e6);
      last_report = now;
    }
  }
  const uint64_t all_tokens = world.Sum(tokens);
  const double seconds = session.seconds();
  const LoaderConfig& config = session.loader_config();
  const nlohmann::json fields = {
      {"steps", loader.step()},
      {"batches", batches},
      {"tokens", all_tokens},
      {"tokens_per_second", seconds > 0 ? all_tokens / seconds : 0.0},
      {"tokens_per_second_per_rank", seconds > 0 ? all_tokens / seconds / world.size() : 0.0},
      {"seq_len", config.seq_len},
      {"batch_size", config.batch_size}};
  session.Finish(fields.dump(), nullptr);
  return 0;
}

}  // namespace

Command SetupRun(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  LoaderConfig& c = options->run.loader;
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
  AddMixingOptions(sub, &options->run.weights, &options->run.weights_schedule);
  sub->add_option("--seq-len", c.seq_len, "Tokens per training sequence; rows hold seq-len + 1")
      ->capture_default_str();
  sub->add_option("--batch-size", c.batch_size, "Rows per batch on each rank")
      ->capture_default_str();
  sub->add_option("--steps", options->run.steps, "Stop after this global step")->capture_default_str();
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
  sub->add_option("--trace", options->run.trace_dir,
                  "Write what every rank delivers, for `stoker audit DIR`: per batch, before the "
                  "next is taken, one record per document piece (step, dataset, document, epoch, "
                  "first framed position, count) to DIR/from-<S>/rank-<r>-of-<W>.trace, S being "
                  "the step the run starts from (0, or the resumed step). Traces of runs from "
                  "step S or later are removed first: they are replayed");
  sub->add_option("--checkpoint-dir", options->run.checkpoint_dir,
                  "Folder of checkpoints: --save-every writes DIR/step-<N>/loader/, one file per "
                  "rank; --resume goes on from the newest complete step");
  sub->add_option("--save-every", options->run.save_every,
                  "Save the loader's state every K global steps (0: never)")
      ->capture_default_str();
  CLI::Option* resume = sub->add_flag(
      "--resume", options->run.resume,
      "Go on from the newest complete step under --checkpoint-dir, on any number of "
      "ranks (no step folder yet: start at step 0; step folders none of which is complete: "
      "refused); --steps N still stops after global step N");
  sub->add_flag("--start-over", options->run.start_over,
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
