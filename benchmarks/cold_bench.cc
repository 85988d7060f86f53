// bench_loader --mode cold (cold_bench.h; the top of loader_bench.cc says what each row
// measures): the checks and the MPI pieces first, then the mmap reader, fio, the measurements
// and the table. What it asks of the system is in cold_storage.h.
#include "cold_bench.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/check.h"
#include "base/text_table.h"
#include "base/unique_handle.h"
#include "cold_storage.h"
#include "loader_bench.h"
#include "mpi/comm.h"
#include "order/random.h"
#include "os/child_process.h"
#include "os/unique_fd.h"
#include "shard/array_locations.h"
#include "shard/discovery.h"
#include "shard/shard_reader.h"
#include "stoker/error.h"
#include "tokens/token_type.h"

namespace stoker::bench {
namespace {

constexpr uint64_t kVocab = 128'256;      // a Llama 3 vocabulary: ids above 65,535, uint32 tokens
constexpr uint32_t kFilesPerDataset = 8;  // of the corpus's 2 datasets
constexpr int kFioSeconds = 300;          // the most one fio run may take

// ---- the system and MPI -----------------------------------------------------------------

// Collective: rank 0 empties the page cache before a measurement; IoError on every rank if not.
void DropCaches(const mpi::Comm& world) {
  mpi::FailTogether(world, [&] {
    if (world.rank() != 0) return;
    const std::string why = DropPageCache();
    STOKER_CHECK(why.empty(), IoError, "{}", why);
  });
}

// Whether `argv` can be started and exits 0 (its output is not kept).
bool RunsAndExitsZero(const std::vector<std::string>& argv) {
  try {
    return RunChild(argv).status == 0;
  } catch (const IoError&) {  // not installed
    return false;
  }
}

// Rank 0: why cold figures cannot be measured here, or "" (and the page cache is then empty).
std::string Refusal(const std::string& dir) {
  if (!RunsAndExitsZero({"fio", "--version"})) {
    return "fio cannot be run (is it installed? apt-get install fio, or scripts/setup.sh): no "
           "random-read figures without it";
  }
  if (InMemory(dir)) {
    return fmt::format("{} is in memory (tmpfs): its files are never cold; give a --dir on disk",
                       dir);
  }
  return DropPageCache();
}

// Collective: a barrier that sleeps while it waits. A rank blocked in an MPI call polls, taking
// a core that rank 0 measuring alone would lack on a small machine.
void SleepingBarrier(const mpi::Comm& comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  mpi::Check(MPI_Ibarrier(comm.get(), &request), "MPI_Ibarrier");
  for (int done = 0;;) {
    mpi::Check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// Collective: rank 0 alone runs `measure` while the other ranks sleep; an error it raises is
// raised on every rank together.
void OnRankZeroAlone(const mpi::Comm& world, const std::function<void()>& measure) {
  std::exception_ptr error;
  if (world.rank() == 0) {
    try {
      measure();
    } catch (...) {
      error = std::current_exception();
    }
  }
  SleepingBarrier(world);
  mpi::RaiseTogether(world, error);
}

// Collective over `world`: a communicator of rank 0 alone, on rank 0; nullopt on the others.
std::optional<mpi::Comm> RankZeroAlone(const mpi::Comm& world) {
  MPI_Comm split = MPI_COMM_NULL;
  mpi::Check(MPI_Comm_split(world.get(), world.rank() == 0 ? 0 : MPI_UNDEFINED, 0, &split),
             "MPI_Comm_split");
  const UniqueHandle<mpi::CommTraits> owned(split);  // freed once duplicated
  if (!owned) return std::nullopt;
  return mpi::Comm(split);
}

// ---- the mmap reader -------------------------------------------------------------------------

// One file's token array mapped read-only at its byte offset (the mapping starts at the page
// holding it); unmapped on destruction.
class TokenMap {
 public:
  TokenMap(const std::string& path, const ShardInfo& shard, const ArrayLocation& tokens)
      : width_(TokenTypeSize(shard.token_type)) {
    STOKER_CHECK(tokens.direct, DataError, "{}: /tokens is not contiguous: it cannot be mapped",
                 path);
    if (shard.tokens == 0) return;
    const uint64_t page = ::sysconf(_SC_PAGESIZE), start = tokens.byte_offset / page * page;
    length_ = tokens.byte_offset - start + shard.tokens * width_;
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    STOKER_CHECK(fd, IoError, "cannot open {}: {}", path, std::strerror(errno));
    void* base = ::mmap(nullptr, length_, PROT_READ, MAP_SHARED, fd.get(), start);
    STOKER_CHECK(base != MAP_FAILED, IoError, "cannot map {}: {}", path, std::strerror(errno));
    base_ = base;
    tokens_ = static_cast<const char*>(base) + (tokens.byte_offset - start);
  }
  TokenMap(TokenMap&& other) noexcept
      : base_(std::exchange(other.base_, nullptr)),
        length_(other.length_),
        tokens_(other.tokens_),
        width_(other.width_) {}
  TokenMap& operator=(TokenMap&&) = delete;
  ~TokenMap() {
    if (base_ != nullptr) ::munmap(base_, length_);
  }

  // Copies tokens [begin, begin + count) out, page faults and the kernel's read-around included.
  void Copy(uint64_t begin, uint64_t count, void* out) const {
    std::memcpy(out, tokens_ + begin * width_, count * width_);
  }

 private:
  void* base_ = nullptr;
  size_t length_ = 0;
  const char* tokens_ = nullptr;
  size_t width_;
};

// A Megatron-style reader for ReadRandomDocs: tokens copied out of the files' mapped arrays one
// document at a time, with no read-ahead of its own; the two /doc_offsets entries of a document
// read with pread, as the pread baseline reads them.
class MmapDocs {
 public:
  MmapDocs(const CorpusTable& table, const std::vector<ArrayLocations>& arrays) {
    maps_.reserve(table.shards.size());
    for (size_t i = 0; i < table.shards.size(); ++i) {
      const ShardInfo& s = table.shards[i];
      offsets_.push_back(std::make_unique<ShardReader>(table.root, s, arrays[i]));
      maps_.emplace_back(table.root + "/" + s.path, s, arrays[i].tokens);
    }
  }
  void Offsets(size_t f, uint64_t doc, uint64_t* out) { offsets_[f]->ReadOffsets(doc, 2, out); }
  void Tokens(size_t f, uint64_t begin, uint64_t count, void* out) {
    maps_[f].Copy(begin, count, out);
  }

 private:
  std::vector<std::unique_ptr<ShardReader>> offsets_;
  std::vector<TokenMap> maps_;
};

// ---- the measurements ------------------------------------------------------------------------

// What every measurement of one run of the mode needs.
struct ColdRun {
  const mpi::Comm& world;
  const std::optional<mpi::Comm>& alone;  // rank 0 alone, on rank 0
  const Options& o;
  CorpusTable table;
  std::vector<ArrayLocations> arrays;
  int width = 4;          // bytes per token
  uint64_t block = 4096;  // fio's reads: the mean document's bytes rounded up to 4 KiB
  uint64_t salt = 1;      // every read's seed derives from it (Options::salt, or a new one)
};

// One measurement: tokens per second (file bytes / width where bytes are what is counted), and
// where they apply, fio's reads per second and the cores the process used (summed over ranks).
struct Sample {
  double tokens_per_second = 0;
  std::optional<double> iops, cores;
};

// Random O_DIRECT reads of `run.block` bytes over every file of the corpus (a file name's colons
// escaped, as fio wants), `tokens` tokens' worth in all, at queue depth `depth`, from `seed`
// (below 2^63: fio parses it as a signed number).
std::vector<std::string> FioCommand(const ColdRun& run, int depth, uint64_t seed) {
  std::string files;
  for (const ShardInfo& s : run.table.shards) {
    std::string path = run.table.root + "/" + s.path;
    for (size_t at = 0; (at = path.find(':', at)) != std::string::npos; at += 2) {
      path.insert(at, "\\");
    }
    files += (files.empty() ? "" : ":") + path;
  }
  return {"fio",
          "--name=cold",
          "--readonly",
          "--ioengine=libaio",
          "--direct=1",
          "--rw=randread",
          fmt::format("--bs={}", run.block),
          fmt::format("--iodepth={}", depth),
          "--filename=" + files,
          fmt::format("--io_size={}", run.o.tokens * run.width),
          fmt::format("--runtime={}", kFioSeconds),
          fmt::format("--randseed={}", seed),
          "--output-format=json"};
}

// fio's JSON report: the read bandwidth (bytes/s) and IOPS of its one job.
Sample ParseFio(const std::string& out, int width) {
  using Pointer = nlohmann::json::json_pointer;
  const auto report = nlohmann::json::parse(out.substr(std::min(out.find('{'), out.size())),
                                            nullptr, /*allow_exceptions=*/false);
  double bytes_per_second = 0, iops = 0;
  if (report.is_object()) {
    bytes_per_second = report.value(Pointer("/jobs/0/read/bw_bytes"), 0.0);
    iops = report.value(Pointer("/jobs/0/read/iops"), 0.0);
  }
  STOKER_CHECK(bytes_per_second > 0 && iops > 0, IoError,
               "fio's report gives no read bandwidth: {}", out.substr(0, 400));
  return {.tokens_per_second = bytes_per_second / width, .iops = iops};
}

Sample Sequential(const ColdRun& run, uint64_t /*rep*/) {
  Sample s;
  OnRankZeroAlone(run.world, [&] {
    const auto start = Clock::now();
    const uint64_t bytes = ReadFilesWhole(run.table, 0, 1);
    s.tokens_per_second = bytes / Since(start) / run.width;
  });
  return s;
}

Sample RandomReads(const ColdRun& run, int depth, uint64_t rep) {
  Sample s;
  OnRankZeroAlone(run.world, [&] {
    const ChildResult fio =
        RunChild(FioCommand(run, depth, DeriveKey(run.salt, "cold-fio", depth, rep) >> 1));
    STOKER_CHECK(fio.status == 0, IoError,
                 "fio at queue depth {} failed (exit status {}; its messages are above)", depth,
                 fio.status);
    s = ParseFio(fio.output, run.width);
  });
  return s;
}

Sample Mmap(const ColdRun& run, uint64_t rep) {
  Sample s;
  OnRankZeroAlone(run.world, [&] {
    const Rate r = ReadRandomDocs<MmapDocs>(run.table, run.o.tokens,
                                            DeriveKey(run.salt, "cold-mmap", rep), run.arrays);
    s.tokens_per_second = r.tokens / r.seconds;
  });
  return s;
}

// The options' Loader, with a seed of its own per rank count and run: other documents each time.
LoaderConfig ColdConfig(const ColdRun& run, int ranks, uint64_t rep) {
  LoaderConfig config = ConfigFor(run.o, run.table.root);
  config.seed = DeriveKey(run.salt, "cold-loader", ranks, rep);
  return config;
}

Sample LoaderAlone(const ColdRun& run, uint64_t rep) {
  Sample s;
  OnRankZeroAlone(run.world, [&] {
    const Rate r = RunLoader(*run.alone, ColdConfig(run, 1, rep), run.o.tokens, 0);
    s = {.tokens_per_second = r.tokens / r.seconds, .cores = r.cpu / r.seconds};
  });
  return s;
}

// Every rank delivers its share of `tokens`; the ranks' tokens/s and cores added up.
Sample LoaderOnEveryRank(const ColdRun& run, uint64_t rep) {
  const int ranks = run.world.size();
  const uint64_t share = (run.o.tokens + ranks - 1) / ranks;
  const Rate r = RunLoader(run.world, ColdConfig(run, ranks, rep), share, 0);
  SleepingBarrier(run.world);  // the rank done first must not spin beside the other one
  const std::vector<double> rates = PerRank(run.world, r.tokens / r.seconds);
  const std::vector<double> cores = PerRank(run.world, r.cpu / r.seconds);
  return {.tokens_per_second = std::accumulate(rates.begin(), rates.end(), 0.0),
          .cores = std::accumulate(cores.begin(), cores.end(), 0.0)};
}

// One row of the table: what it measures (collective), and its figures, one entry per run.
struct Row {
  std::string name;
  std::function<Sample(const ColdRun&, uint64_t rep)> measure;
  std::vector<double> tokens_per_second, iops, cores;
  void Add(const Sample& s) {
    tokens_per_second.push_back(s.tokens_per_second);
    if (s.iops) iops.push_back(*s.iops);
    if (s.cores) cores.push_back(*s.cores);
  }
};

constexpr size_t kBaselineRow = 2;  // fio at queue depth 32: every ratio divides by it

std::vector<Row> ColdRows(int ranks) {
  const auto depth = [](int d) {
    return [d](const ColdRun& run, uint64_t rep) { return RandomReads(run, d, rep); };
  };
  std::vector<Row> rows = {{"sequential, every file whole", Sequential},
                           {"fio randread, queue depth 1", depth(1)},
                           {"fio randread, queue depth 32", depth(32)},
                           {fmt::format("fio randread, queue depth {}", LoaderConfig::kNodeIoDepth),
                            depth(LoaderConfig::kNodeIoDepth)},
                           {"mmap, a document at a time", Mmap},
                           {"loader, 1 rank", LoaderAlone}};
  if (ranks > 1) rows.push_back({fmt::format("loader, {} ranks", ranks), LoaderOnEveryRank});
  return rows;
}

// ---- the table -------------------------------------------------------------------------------

std::string MedianOrDash(const std::vector<double>& v, int digits) {
  return v.empty() ? "-" : fmt::format("{:.{}f}", Median(v), digits);
}

void PrintCold(const ColdRun& run, const std::vector<Row>& rows) {
  uint64_t bytes = 0;
  for (const ShardInfo& s : run.table.shards) bytes += s.file_bytes;
  const ReadAhead read_ahead = FindReadAhead(run.table.root);
  std::printf(
      "# cold: %s: %zu files, %llu docs, %llu tokens of %d bytes, %.2f GB of files; "
      "device %s, read_ahead_kb %s\n",
      run.table.root.c_str(), run.table.shards.size(),
      static_cast<unsigned long long>(run.table.total_docs()),
      static_cast<unsigned long long>(run.table.total_tokens()), run.width, bytes / 1e9,
      read_ahead.device.c_str(), read_ahead.kb.c_str());
  const std::string depth =
      run.o.io_depth == 0
          ? fmt::format("auto ({} a node, shared by its ranks)", LoaderConfig::kNodeIoDepth)
          : std::to_string(run.o.io_depth);
  std::printf(
      "# each run after sync and drop_caches reads %llu tokens (%.0f MB; sequential: "
      "every file), fio in blocks of %llu bytes; medians of %llu runs; MB = 10^6 bytes "
      "of file; cores: (user + system) / wall seconds, summed over the ranks\n"
      "# loader: --io-engine %s, --io-depth %s, --read-ahead-bytes %llu, --direct-io %s, "
      "--offset-cache-bytes %llu; reads drawn with --salt %llu\n",
      static_cast<unsigned long long>(run.o.tokens), run.o.tokens * run.width / 1e6,
      static_cast<unsigned long long>(run.block), static_cast<unsigned long long>(run.o.repeat),
      std::string(IoEngineName(run.o.io_engine)).c_str(), depth.c_str(),
      static_cast<unsigned long long>(run.o.read_ahead_bytes),
      std::string(DirectIoName(run.o.direct_io.value_or(DirectIo::kAuto))).c_str(),
      static_cast<unsigned long long>(run.o.offset_cache_bytes),
      static_cast<unsigned long long>(run.salt));
  std::vector<std::vector<std::string>> cells = {
      {"reader", "M tokens/s", "MB/s", "/ qd32", "IOPS", "cores"}};
  const double baseline = Median(rows[kBaselineRow].tokens_per_second);
  for (const Row& row : rows) {
    const double rate = Median(row.tokens_per_second);
    cells.push_back({row.name, fmt::format("{:.2f}", rate / 1e6),
                     fmt::format("{:.1f}", rate * run.width / 1e6),
                     fmt::format("{:.3f}", rate / baseline), MedianOrDash(row.iops, 0),
                     MedianOrDash(row.cores, 2)});
  }
  std::fputs(Tabulate(cells, {0}).c_str(), stdout);
}

// A corpus far smaller than 10 times a measurement's reads is read into the page cache by the
// kernel's read-ahead (8 MiB around each fault on this machine's disk) within the run.
void CheckSizes(const Options& o, int width) {
  STOKER_CHECK(o.tokens <= o.corpus_tokens / 10, ConfigError,
               "cold: the corpus, --corpus-tokens {} ({:.2f} GB), must be at least 10 times what "
               "one measurement reads, --tokens {} ({:.2f} GB): the kernel's read-ahead caches a "
               "smaller corpus during the run, and its figures would be warm in disguise",
               o.corpus_tokens, 1.0 * o.corpus_tokens * width / 1e9, o.tokens,
               1.0 * o.tokens * width / 1e9);
}

// The mean document's bytes rounded up to 4 KiB (at least 4 KiB): O_DIRECT reads whole blocks.
uint64_t FioBlock(const CorpusTable& table, int width) {
  const uint64_t docs = std::max<uint64_t>(table.total_docs(), 1);
  const uint64_t mean = std::max<uint64_t>((table.total_tokens() * width + docs - 1) / docs, 1);
  return (mean + 4095) / 4096 * 4096;
}

SynthSpec ColdSpec(const std::string& root, uint64_t tokens) {
  SynthSpec spec{.out = root, .files = kFilesPerDataset, .seed = 4, .vocab = kVocab, .force = true};
  for (const char* name : {"books", "web"}) spec.datasets.push_back({name, tokens / 2, 1000.0});
  return spec;
}

}  // namespace

int Cold(const mpi::Comm& world, const Options& o) {
  const int width = TokenTypeSize(TokenTypeForVocab(kVocab));
  CheckSizes(o, width);
  std::string refusal = world.rank() == 0 ? Refusal(o.dir) : "";
  world.Broadcast(&refusal, 0);
  if (!refusal.empty()) {
    if (world.rank() == 0) std::fprintf(stderr, "bench_loader: cold: %s\n", refusal.c_str());
    return 2;
  }
  const std::string root = fmt::format("{}/cold-{}", o.dir, o.corpus_tokens);
  EnsureCorpus(world, ColdSpec(root, o.corpus_tokens));
  const std::optional<mpi::Comm> alone = RankZeroAlone(world);
  ColdRun run{.world = world, .alone = alone, .o = o, .width = width, .salt = o.salt};
  if (run.salt == 0) {  // other documents and offsets than any earlier run's: rank 0's draw
    run.salt = world.Max(world.rank() == 0 ? std::random_device{}() | uint64_t{1} << 32 : 0);
  }
  run.table = DiscoverCorpus(world, root, &run.arrays);
  run.block = FioBlock(run.table, width);
  std::vector<Row> rows = ColdRows(world.size());
  for (uint64_t rep = 0; rep < o.repeat; ++rep) {
    for (Row& row : rows) {
      DropCaches(world);
      row.Add(row.measure(run, rep));
    }
  }
  if (world.rank() == 0) PrintCold(run, rows);
  return 0;
}

}  // namespace stoker::bench
