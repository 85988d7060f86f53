// `stoker run --data CORPUS ...`: pulls batches from the Loader as a trainer would, until step N.
// Rank 0 shows progress and ends with one JSON line on stdout. With --dump DIR every rank writes
// each batch it delivers, before it takes the next, to DIR/rank-<r>.bin (raw little-endian int64
// rows of seq_len + 1 tokens), for tests and for checking a run's order by hand. With --trace DIR
// every rank writes the pieces of each batch it delivers, before it takes the next, to
// DIR/from-<S>/rank-<r>-of-<W>.trace (stoker/trace.h), for `stoker audit`. The run session
// (stoker/run_session.h) holds the rest of the job: settings checked, resume, saves, result.
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
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
#include "stoker/program/options.h"
#include "stoker/run_session.h"
#include "stoker/weights.h"

namespace stoker::cli {

namespace {

using program::ProgramSettings;

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

int RunRun(const ProgramSettings& options, const mpi::Comm& world) {
  // SIGUSR1 and SIGTERM stop the run at the next step, saved, as they stop a trainer.
  InstallStopHandlers();
  const RunSettings& settings = options.run;
  if (!CheckRunSettings(world.get(), settings, nullptr, "stoker run")) return 2;
  RunSession session(world.get(), settings, {.tag = "run"});
  Loader loader(world.get(), session.loader_config());
  session.Start(loader);
  std::optional<Dump> dump;
  if (!options.dump.empty()) dump.emplace(options.dump, world.rank());

  // The ranks agree on a stop (one all-reduce) every 64 Ki tokens a rank, not every step: a step
  // of a few hundred tokens takes microseconds, as long as that all-reduce on a busy node.
  const LoaderConfig& config = session.loader_config();
  const uint64_t stop_every =
      std::max<uint64_t>(1, 65536 / (config.batch_size * (config.seq_len + 1)));
  double last_report = 0;
  uint64_t tokens = 0, batches = 0;
  while (session.Running()) {
    const Batch batch = session.Next();
    ++batches;
    tokens += batch.tokens.size();
    if (dump) dump->Write(batch);
    session.EndStep(batch.step % stop_every == 0 && session.StopTogether(), nullptr);
    if (const double now = session.seconds(); now - last_report >= 5 && world.rank() == 0) {
      spdlog::info("run: step {} of {}, {:.1f} M tokens/s on this rank", batch.step, settings.steps,
                   tokens / now / 1e6);
      last_report = now;
    }
  }
  const uint64_t all_tokens = world.Sum(tokens);
  // In a layout the members of a replica hold the same batches: a replica's tokens once.
  const uint64_t replica_tokens = world.Sum(loader.replica_first() ? tokens : 0);
  const double seconds = session.seconds();
  const nlohmann::json fields = {
      {"steps", loader.step()},
      {"batches", batches},
      {"tokens", all_tokens},
      {"tokens_per_second", seconds > 0 ? all_tokens / seconds : 0.0},
      {"tokens_per_second_per_rank", seconds > 0 ? all_tokens / seconds / world.size() : 0.0},
      {"replicas", loader.world_size()},
      {"tokens_per_second_per_replica",
       seconds > 0 ? replica_tokens / seconds / loader.world_size() : 0.0},
      {"seq_len", config.seq_len},
      {"batch_size", config.batch_size}};
  session.Finish(fields.dump(), nullptr);
  return 0;
}

}  // namespace

Command SetupRun(CLI::App& app) {
  auto options =
      std::make_shared<ProgramSettings>(program::DefaultSettings(program::Program::kRun));
  CLI::App* sub = app.add_subcommand(
      "run",
      "Stream batches from the loader as a trainer would.\n"
      "Pulls batches until step --steps. Every rank streams its "
      "own rows of seq-len + 1 tokens; together the ranks see every document once per epoch, "
      "globally shuffled, mixed by --weights. Rank 0 ends by printing one JSON line (ranks, "
      "steps, tokens of all ranks, seconds, tokens_per_second; with --layout, replicas and "
      "tokens_per_second_per_replica, a replica's tokens counted once; startup and wait times). A "
      "setting not on the command line comes from its environment variable when that is set "
      "(`stoker settings` lists them), then from --config.");
  auto line = std::make_shared<program::CommandLine>(sub, program::Program::kRun, options.get());
  return {sub, [options, line, sub](const mpi::Comm& world) {
            try {  // a wrong variable or --config file: exit 2, as for any wrong setting
              mpi::FailTogether(world, [&] {
                line->ApplyEnvironment();
                if (!options->config_file.empty()) ApplyConfigFile(sub, options->config_file);
                line->Settle();
              });
            } catch (const ConfigError& e) {
              if (world.rank() == 0) spdlog::error("stoker run: {}", e.what());
              return 2;
            }
            return RunRun(*options, world);
          }};
}

}  // namespace stoker::cli
