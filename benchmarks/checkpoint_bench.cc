// bench_checkpoint: what a loader checkpoint costs. A standalone MPI program (run under mpirun).
//
//   bench_checkpoint save     --data CORPUS --dir CKPT [--steps 20] [--repeat 20]
//       Every rank pulls batches and saves after each of `repeat` of them. Prints the median time
//       the trainer's thread is blocked in Save() beside the median Next() (the baseline: one
//       step's data), the median background write (Save() to WaitForSave()), beside a plain
//       write + fsync of the same number of bytes, and the bytes per rank file. Leaves the last
//       step folder in CKPT for `restore`.
//   bench_checkpoint restore  --data CORPUS --dir CKPT [--repeat 5]
//       Times Loader construction resuming from the newest step in CKPT (whatever world saved
//       it) beside a fresh construction on the same corpus, median and max over ranks.
//   bench_checkpoint plan     [--world 16384] [--shards 16777216] [--dealt-docs 0] ...
//   bench_checkpoint rescale  [--from 4096] [--to 3000] [--shards 65536] [--datasets 3] ...
//       One process, no MPI: a large world's planning and rescale, rank by rank
//       (benchmarks/checkpoint_scale.h).
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint_scale.h"
#include "mpi/comm.h"
#include "stoker/checkpoint.h"
#include "stoker/loader.h"
#include "stoker/program/log.h"

namespace stoker {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Options {
  std::string mode, data, dir;
  int steps = 20, repeat = 20;
};

std::string Flag(int argc, char** argv, const char* name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return fallback;
}

// The max over ranks of a local figure.
double MaxOver(const mpi::Comm& comm, double value) {
  return static_cast<double>(comm.Max(static_cast<uint64_t>(value * 1e9))) / 1e9;
}

double PlainWrite(const std::string& path, uint64_t bytes) {
  const std::string data(bytes, 'x');
  const auto start = Clock::now();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || ::write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size()) ||
      ::fsync(fd) != 0) {
    std::perror("plain write");
  }
  ::close(fd);
  return Seconds(start);
}

void Save(const mpi::Comm& comm, const Options& o) {
  LoaderConfig config{.data = o.data, .seq_len = 4096, .batch_size = 8};
  Loader loader(comm.get(), config);
  std::vector<double> next, blocked, written;
  uint64_t bytes = 0;
  std::string last;
  for (int i = 0; i < o.repeat; ++i) {
    for (int s = 0; s < o.steps; ++s) {
      const auto start = Clock::now();
      loader.Next();
      next.push_back(Seconds(start));
    }
    last = fmt::format("{}/step-{}", o.dir, loader.step());
    const auto start = Clock::now();
    loader.Save(last);
    blocked.push_back(Seconds(start));
    loader.WaitForSave();
    written.push_back(Seconds(start));
    bytes = std::filesystem::file_size(CheckpointPath(last, comm.rank(), comm.size()));
  }
  std::vector<double> plain;
  for (int i = 0; i < 5; ++i) {
    plain.push_back(PlainWrite(fmt::format("{}/plain-{}.bin", o.dir, comm.rank()), bytes));
  }
  const double b = MaxOver(comm, Median(blocked)), n = MaxOver(comm, Median(next));
  const double w = MaxOver(comm, Median(written)), p = MaxOver(comm, Median(plain));
  const uint64_t max_bytes = comm.Max(bytes);
  if (comm.rank() == 0) {
    fmt::print("save ranks={} blocking_median_ms={:.3f} next_median_ms={:.3f} ratio={:.3f}\n",
               comm.size(), b * 1e3, n * 1e3, b / n);
    fmt::print(
        "save ranks={} background_write_median_ms={:.3f} plain_write_fsync_ms={:.3f} "
        "ratio={:.2f} bytes_per_rank_file={}\n",
        comm.size(), w * 1e3, p * 1e3, w / p, max_bytes);
  }
}

void Restore(const mpi::Comm& comm, const Options& o) {
  const auto step = FindResumeStep(comm.get(), o.dir);
  if (!step) {
    if (comm.rank() == 0) fmt::print("restore: no checkpoint in {}\n", o.dir);
    return;
  }
  std::vector<double> resumed, fresh;
  for (int i = 0; i < o.repeat; ++i) {
    for (bool resume : {false, true}) {
      LoaderConfig config{.data = o.data, .seq_len = 4096, .batch_size = 8};
      if (resume) config.resume_from = *step;
      comm.Barrier();
      const auto start = Clock::now();
      Loader loader(comm.get(), config);
      (resume ? resumed : fresh).push_back(MaxOver(comm, Seconds(start)));
    }
  }
  if (comm.rank() == 0) {
    fmt::print(
        "restore ranks={} from={} resume_median_s={:.4f} fresh_median_s={:.4f} "
        "ratio={:.2f}\n",
        comm.size(), *step, Median(resumed), Median(fresh), Median(resumed) / Median(fresh));
  }
}

}  // namespace
}  // namespace stoker

int main(int argc, char** argv) {
  using stoker::Options;
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::puts(
        "usage: bench_checkpoint save|restore|plan|rescale [flags] (see the top of "
        "benchmarks/checkpoint_bench.cc)");
    return argc < 2 ? 2 : 0;
  }
  Options o;
  o.mode = argv[1];
  o.data = stoker::Flag(argc, argv, "--data", "");
  o.dir = stoker::Flag(argc, argv, "--dir", "/tmp/stoker-bench-ckpt");
  o.steps = std::stoi(stoker::Flag(argc, argv, "--steps", "20"));
  o.repeat = std::stoi(stoker::Flag(argc, argv, "--repeat", o.mode == "restore" ? "5" : "20"));
  stoker::ScaleOptions scale;
  const auto number = [&](const char* flag, uint64_t fallback) {
    return std::stoull(stoker::Flag(argc, argv, flag, std::to_string(fallback)));
  };
  scale.world = number("--world", scale.world);
  scale.shards = number("--shards", o.mode == "plan" ? uint64_t{1} << 24 : scale.shards);
  scale.datasets = number("--datasets", scale.datasets);
  scale.dealt_docs = number("--dealt-docs", 0);
  scale.dealt = number("--dealt", 0) != 0;
  scale.sample = number("--sample", o.mode == "plan" ? 16 : 8);
  scale.steps = number("--steps", 4);
  scale.from = number("--from", scale.from);
  scale.to = number("--to", scale.to);
  if (o.mode == "plan") {
    stoker::PlanAtScale(scale);
    return 0;
  }
  if (o.mode == "rescale") {
    stoker::RescaleAtScale(scale);
    return 0;
  }
  stoker::mpi::Session session(&argc, &argv);
  stoker::mpi::Comm comm(MPI_COMM_WORLD);
  stoker::program::InitLogging(comm.rank(), spdlog::level::warn);
  if (o.mode == "save") stoker::Save(comm, o);
  if (o.mode == "restore") stoker::Restore(comm, o);
  return 0;
}
