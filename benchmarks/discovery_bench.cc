// bench_discovery: how long collective corpus discovery takes, against one rank opening every file.
//
// A standalone MPI program (run it under mpirun; Google Benchmark does not know about ranks):
//   bench_discovery [--files 1000,10000] [--repeat 5] [--dir DIR]
// For each corpus size N it makes, once, on rank 0 and outside the timing, a corpus of N small
// shards (4 datasets, ~1,000 uint16 tokens per shard, 100 shards per subfolder) in DIR/corpus-N,
// or reuses that folder when an earlier run left it complete. It then measures, interleaved,
// `repeat` times each after one untimed warm-up of both (the page cache forgets idle files here):
//   discover  DiscoverCorpus on all ranks: barrier, then the time of the slowest rank;
//   views     RequireSameCorpusView on all ranks (what the loader adds at start-up so that ranks
//             seeing other files behind their paths are refused): the ranks of a node share the
//             shards out, each opening its part to read sizes and content checksums, and one
//             all-reduce compares the nodes' views; the time of the slowest rank;
//   baseline  rank 0 alone listing the corpus and opening every file with HDF5 to describe /tokens
//             and /doc_offsets: what a loader does when each rank reads all metadata itself. The
//             other ranks sleep meanwhile, so the baseline is one process's cost at any rank count.
// Rank 0 prints one line per measurement: ranks, files, median and minimum seconds, files per
// second and microseconds per file at the median, and the median's ratio to the baseline's median
// from the same run (time / baseline time: below 1 is faster than the baseline).
#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/check.h"
#include "h5/h5.h"
#include "mpi/comm.h"
#include "order/random.h"
#include "shard/corpus_view.h"
#include "shard/discovery.h"
#include "shard/shard_writer.h"
#include "stoker/error.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

constexpr int kDatasets = 4;
constexpr uint64_t kShardsPerFolder = 100;
constexpr int kDocsPerShard = 4;
constexpr uint64_t kVocab = 50257;

constexpr char kUsage[] =
    "usage: bench_discovery [--files N1,N2,...] [--repeat R] [--dir DIR]\n"
    "  --files   corpus sizes to measure, in shards (files), comma-separated; default 1000,10000\n"
    "  --repeat  timed runs per measurement (after one untimed warm-up); default 5\n"
    "  --dir     folder for the corpora (DIR/corpus-N), kept afterwards and reused by later runs;\n"
    "            default: a fresh folder under $TMPDIR (or /tmp), removed at the end\n";

struct Options {
  std::vector<uint64_t> files = {1000, 10000};
  int repeat = 5;
  std::string dir;  // empty: a temporary folder
  bool help = false;
};

uint64_t ParsePositive(const std::string& flag, const std::string& text) {
  size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  STOKER_CHECK(used == text.size() && !text.empty() && text[0] != '-' && value > 0, ConfigError,
               "{} takes positive integers; got '{}'", flag, text);
  return value;
}

// Flags by hand (no CLI11 in benchmarks): --flag value or --flag=value.
Options ParseArgs(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    if (flag == "--help" || flag == "-h") {
      options.help = true;
      continue;
    }
    if (const size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    } else if (flag == "--files" || flag == "--repeat" || flag == "--dir") {
      STOKER_CHECK(i + 1 < argc, ConfigError, "{} needs a value", flag);
      value = argv[++i];
    }
    if (flag == "--files") {
      options.files.clear();
      std::stringstream list(value);
      for (std::string item; std::getline(list, item, ',');) {
        options.files.push_back(ParsePositive(flag, item));
      }
      STOKER_CHECK(!options.files.empty(), ConfigError, "--files needs at least one size");
    } else if (flag == "--repeat") {
      options.repeat = static_cast<int>(std::min<uint64_t>(ParsePositive(flag, value), 1000));
    } else if (flag == "--dir") {
      STOKER_CHECK(!value.empty(), ConfigError, "--dir needs a folder");
      options.dir = value;
    } else {
      throw ConfigError(fmt::format("unknown option '{}'", argv[i]));
    }
  }
  return options;
}

std::string Marker(uint64_t files) {
  return fmt::format("stoker bench_discovery corpus v1: files={} datasets={} docs_per_shard={}\n",
                     files, kDatasets, kDocsPerShard);
}

// The marker is a hidden file in the corpus root: discovery ignores it.
bool CorpusIsComplete(const std::string& root, uint64_t files) {
  std::ifstream in(root + "/.bench-complete");
  std::stringstream text;
  text << in.rdbuf();
  return in.good() && text.str() == Marker(files);
}

void MakeCorpus(const std::string& root, uint64_t files) {
  fs::remove_all(root);
  const ShardAttributes attributes{.vocab_size = kVocab, .eos_id = kVocab - 1, .tokenizer = "gpt2"};
  for (uint64_t i = 0; i < files; ++i) {
    const uint64_t j = i / kDatasets;  // the shard's index in its dataset
    const std::string path = fmt::format("{}/ds-{}/group-{:03}/shard-{:06}.h5", root, i % kDatasets,
                                         j / kShardsPerFolder, j);
    CounterRng rng(DeriveKey(1, "bench_discovery", i));
    std::vector<uint64_t> offsets = {0}, tokens;
    for (int d = 0; d < kDocsPerShard; ++d) {
      const uint64_t length = 150 + rng.NextBelow(200);  // ~1,000 tokens per shard
      for (uint64_t t = 0; t < length; ++t) tokens.push_back(rng.NextBelow(kVocab));
      offsets.push_back(tokens.size());
    }
    WriteShard(path, TokenType::kUint16, offsets, tokens, attributes);
  }
  std::ofstream(root + "/.bench-complete") << Marker(files);
}

// Rank 0 makes the folder; every rank learns its name.
std::string SharedFolder(const mpi::Comm& comm, const std::string& wanted) {
  std::string path = wanted;
  mpi::FailTogether(comm, [&] {
    if (comm.rank() != 0) return;
    if (!path.empty()) {
      fs::create_directories(path);
      return;
    }
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base != nullptr ? base : "/tmp") + "/bench-discovery-XXXXXX";
    STOKER_CHECK(::mkdtemp(templ.data()) != nullptr, IoError, "cannot make a folder {}", templ);
    path = templ;
  });
  comm.Broadcast(&path, 0);
  return path;
}

// A barrier that sleeps while it waits. Open MPI polls in a blocking barrier (and only yields when
// oversubscribed): idle ranks would take CPU from rank 0 while it runs the baseline on 2 cores.
void SleepingBarrier(const mpi::Comm& comm) {
  MPI_Request request;
  STOKER_CHECK(MPI_Ibarrier(comm.get(), &request) == MPI_SUCCESS, MpiError, "MPI_Ibarrier failed");
  for (int done = 0; !done; std::this_thread::sleep_for(std::chrono::microseconds(200))) {
    STOKER_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS, MpiError,
                 "MPI_Test failed");
  }
}

// Collective: runs `work` (on every rank, or on rank 0 only, the others sleeping meanwhile) after
// a barrier and returns the seconds the slowest rank took.
double TimeIt(const mpi::Comm& comm, bool everyone, const std::function<void()>& work) {
  comm.Barrier();
  const auto start = std::chrono::steady_clock::now();
  if (everyone || comm.rank() == 0) work();
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  if (!everyone) SleepingBarrier(comm);
  return static_cast<double>(comm.Max(static_cast<uint64_t>(ns))) * 1e-9;
}

// What the baseline saw: the lengths of the arrays it described, summed over the files.
struct Described {
  uint64_t tokens = 0;
  uint64_t offsets = 0;
};

// The baseline: list the corpus as discovery does, then open every file and describe both arrays.
Described DescribeEveryFile(const std::string& root) {
  std::vector<std::string> paths;
  for (const auto& dataset : fs::directory_iterator(root)) {
    if (!dataset.is_directory() || dataset.path().filename().string().starts_with(".")) continue;
    for (const auto& entry : fs::recursive_directory_iterator(dataset.path())) {
      if (entry.path().extension() == ".h5" && entry.is_regular_file()) {
        paths.push_back(entry.path().string());
      }
    }
  }
  std::sort(paths.begin(), paths.end());
  Described seen;
  for (const auto& path : paths) {
    const h5::File file = h5::File::OpenReadOnly(path);
    seen.tokens += file.Describe("/tokens").length;
    seen.offsets += file.Describe("/doc_offsets").length;
  }
  return seen;
}

struct Timings {
  std::vector<double> discover;
  std::vector<double> views;
  std::vector<double> baseline;
};

Timings Measure(const mpi::Comm& comm, const std::string& root, uint64_t files, int repeat) {
  Timings timings;
  for (int r = -1; r < repeat; ++r) {  // r == -1: the warm-up
    CorpusTable table;
    const double discover = TimeIt(comm, true, [&] { table = DiscoverCorpus(comm, root); });
    STOKER_CHECK(table.shards.size() == files, InternalError, "{}: found {} shards, made {}", root,
                 table.shards.size(), files);
    const double views = TimeIt(comm, true, [&] { RequireSameCorpusView(comm, root); });
    Described seen;
    const double baseline = TimeIt(comm, false, [&] { seen = DescribeEveryFile(root); });
    // Rank 0 alone checks (and would end the job with MPI_Abort): the baseline did all the work.
    STOKER_CHECK(
        comm.rank() != 0 ||
            (seen.tokens == table.total_tokens() && seen.offsets == table.total_docs() + files),
        InternalError, "{}: the baseline saw {} tokens and {} offsets, discovery {} and {}", root,
        seen.tokens, seen.offsets, table.total_tokens(), table.total_docs() + files);
    if (r < 0) continue;
    timings.discover.push_back(discover);
    timings.views.push_back(views);
    timings.baseline.push_back(baseline);
  }
  return timings;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

void PrintLine(const char* what, int ranks, uint64_t files, const std::vector<double>& seconds,
               double baseline_median) {
  const double median = Median(seconds);
  const double fastest = *std::min_element(seconds.begin(), seconds.end());
  std::printf("%-10s %6d %8llu %10.4f %10.4f %12.0f %12.1f %12.2f\n", what, ranks,
              static_cast<unsigned long long>(files), median, fastest, files / median,
              median / files * 1e6, median / baseline_median);
}

void Run(const mpi::Comm& comm, const Options& options) {
  const std::string dir = SharedFolder(comm, options.dir);
  if (comm.rank() == 0) {
    std::printf("# bench_discovery: %d ranks, %d timed runs each, corpora in %s\n", comm.size(),
                options.repeat, dir.c_str());
    std::printf("%-10s %6s %8s %10s %10s %12s %12s %12s\n", "measure", "ranks", "files", "median_s",
                "min_s", "files_per_s", "us_per_file", "x_baseline");
  }
  for (uint64_t files : options.files) {
    const std::string root = fmt::format("{}/corpus-{}", dir, files);
    mpi::FailTogether(comm, [&] {
      if (comm.rank() == 0 && !CorpusIsComplete(root, files)) MakeCorpus(root, files);
    });
    const Timings timings = Measure(comm, root, files, options.repeat);
    if (comm.rank() == 0) {
      const double baseline = Median(timings.baseline);
      PrintLine("discover", comm.size(), files, timings.discover, baseline);
      PrintLine("views", comm.size(), files, timings.views, baseline);
      PrintLine("baseline", 1, files, timings.baseline, baseline);
      std::fflush(stdout);
    }
  }
  comm.Barrier();
  if (options.dir.empty() && comm.rank() == 0) fs::remove_all(dir);
}

}  // namespace
}  // namespace stoker

namespace {

// Every rank parses the same arguments, so all stop together; rank 0 explains. Nothing to run:
// nullopt, with the exit code in `exit_code` (0 after --help, 2 for a bad option).
std::optional<stoker::Options> Parse(int rank, int argc, char** argv, int* exit_code) {
  try {
    stoker::Options options = stoker::ParseArgs(argc, argv);
    if (!options.help) return options;
    if (rank == 0) std::fputs(stoker::kUsage, stdout);
    *exit_code = 0;
  } catch (const stoker::ConfigError& e) {
    if (rank == 0) std::fprintf(stderr, "bench_discovery: %s\n%s", e.what(), stoker::kUsage);
    *exit_code = 2;
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  stoker::mpi::Session session(&argc, &argv);
  int exit_code = 0;
  {
    stoker::mpi::Comm world(MPI_COMM_WORLD);
    try {
      const std::optional<stoker::Options> options = Parse(world.rank(), argc, argv, &exit_code);
      if (options) stoker::Run(world, *options);
    } catch (const stoker::Error& e) {
      if (!e.collective()) {
        std::fprintf(stderr, "bench_discovery: rank %d: %s\n", world.rank(), e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      if (world.rank() == 0) std::fprintf(stderr, "bench_discovery: %s\n", e.what());
      exit_code = 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_discovery: rank %d: %s\n", world.rank(), e.what());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  return exit_code;
}
