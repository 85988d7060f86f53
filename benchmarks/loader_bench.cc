// bench_loader: the Loader's throughput, time to first batch and memory, per MPI rank, and its
// reading of a corpus that is not in the page cache.
//
// A standalone MPI program (Google Benchmark does not know ranks); run it under mpirun:
//   bench_loader --mode throughput|first-batch|memory|cold [options]   (--help lists them)
// Corpora are made once with SynthesizeCorpus (outside any timing) in DIR/<mode>-<size> and
// reused by later runs (a hidden marker file records the spec). Before every measurement of the
// first three modes the ranks read every file of the corpus once (file i by rank i mod W) so that
// it comes from the page cache: these VMs reclaim it after about a minute idle.
//   throughput   3 datasets, mean document length 1,000, uint16 tokens, 8 files each. Per rank,
//                alternating, `repeat` times after one untimed warm-up of each, each reading
//                uniformly random whole documents of the whole corpus in the file's own type (two
//                /doc_offsets entries, then the tokens), with no loader logic, until `tokens`
//                tokens are read; opening the files is not timed:
//                  h5_readraw  h5::File::OpenReadOnly every file once, then h5::File::ReadRaw (the
//                              h5 layer as it is: each call opens the array, HDF5's defaults);
//                  hdf5        plain HDF5 at its best: both arrays of every file opened once, one
//                              hyperslab H5Dread per read, the sieve buffer off (its default
//                              64 KiB turns every small read into a 64 KiB one);
//                  pread       ShardReader, the loader's own read primitive (pread at the arrays'
//                              byte offsets);
//                then the Loader (seq_len, batch_size; constructed untimed) pulling batches until
//                `tokens` tokens are delivered (EOS included); the time spent inside Next() is the
//                trainer's wait, and loader_cores the CPU the process used meanwhile (user +
//                system seconds of getrusage over wall seconds: cores taken from the trainer);
//                then the same Loader computing every document boundary field (boundaries).
//                Medians per rank, ratios loader / each baseline and boundaries / loader, totals.
//   first-batch  10,000 small files (4 datasets of 2,500 files of 2,000 tokens): seconds from the
//                start of the Loader's construction to the end of the first Next(), slowest rank.
//   memory       3 datasets of 4 files, mean document length 4, `docs` documents in all: VmRSS
//                and VmHWM of every rank right before the Loader's construction (VmHWM reset
//                there through /proc/self/clear_refs) and after `batches` batches. One corpus per
//                process: freed heap of an earlier Loader would hide the next one's growth.
//   cold         (cold_bench.cc; as root, with fio, under mpirun -np 2) 2 datasets of 8 files,
//                mean document length 1,000, uint32 tokens (vocabulary 128,256), at least 10
//                times what one measurement reads (a smaller corpus is cached by the kernel's
//                read-ahead during the run). Before every measurement rank 0 runs sync and writes
//                3 to /proc/sys/vm/drop_caches; each reads other random documents (another seed,
//                drawn from --salt, a new one each run unless given: the disk's host may cache
//                what an earlier run read, page cache dropped or not):
//                  sequential  rank 0 reads every file front to back in 4 MiB reads: the
//                              device's limit;
//                  fio qd1/32  fio --rw=randread --direct=1 --ioengine=libaio over the corpus
//                              files, blocks of the mean document size rounded up to 4 KiB,
//                              `tokens` tokens' worth of bytes, at queue depth 1 and 32;
//                  mmap        Megatron-style on rank 0: every file's token array mapped at its
//                              byte offset, uniformly random documents (two /doc_offsets entries
//                              by pread, as pread above) copied out one at a time;
//                  loader      the Loader on a communicator of rank 0 alone, then on every rank
//                              (`tokens` tokens delivered in all; tokens/s and cores summed).
//                While rank 0 measures alone the other ranks sleep rather than spin in MPI. Per
//                measurement M tokens/s and MB/s of file (tokens x 4 bytes), medians of `repeat`,
//                the ratio to fio at queue depth 32, and for the loader its cores as above; with
//                the corpus size and the read_ahead_kb of the device holding it.
// Rank 0 prints one plain line per measurement (cold: one table). Figures, not a test.
#include "loader_bench.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <hdf5.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/check.h"
#include "cold_bench.h"
#include "h5/h5.h"
#include "mpi/comm.h"
#include "order/random.h"
#include "os/files.h"
#include "os/unique_fd.h"
#include "shard/discovery.h"
#include "shard/shard_reader.h"
#include "stoker/corpus.h"
#include "stoker/error.h"
#include "stoker/loader.h"
#include "tokens/token_type.h"
#include "tools/synth.h"

namespace stoker::bench {
namespace {

constexpr char kUsage[] =
    "usage: bench_loader --mode throughput|first-batch|memory|cold [options]\n"
    "  --mode MODE        what to measure (see the top of benchmarks/loader_bench.cc)\n"
    "  --dir DIR          folder of the corpora, kept and reused;\n"
    "                     default /tmp/stoker-loader-bench\n"
    "  --repeat R         timed runs per measurement; default 5, cold 3\n"
    "  --seq-len N        tokens per row minus one; default 4096\n"
    "  --batch-size N     rows per batch per rank; default 8\n"
    "  --tokens N         throughput: tokens each rank reads per run, baseline and loader alike;\n"
    "                     default 100000000. cold: tokens each measurement reads (all its ranks\n"
    "                     together); default 40000000 (160 MB)\n"
    "  --corpus-tokens N  throughput: tokens of the corpus (uint16, 2 bytes each), split over\n"
    "                     3 datasets; default 600000000 (1.2 GB). cold: uint32 tokens (4 bytes\n"
    "                     each) over 2 datasets, at least 10 times --tokens; default 1000000000\n"
    "                     (4 GB)\n"
    "  --step-ms X        throughput: milliseconds a simulated trainer sleeps after each batch;\n"
    "                     default 0 (a trainer that never computes: all its time is wait)\n"
    "  --files N          first-batch: files in the corpus (a multiple of 4); default 10000\n"
    "  --docs N           memory: documents in the corpus (mean length 4); default 1000000\n"
    "  --batches N        memory: batches pulled before measuring; default 200\n"
    "  --offset-cache-bytes N  the Loader's cache of document offsets, bytes per rank; default\n"
    "                     8388608 (LoaderConfig's): smaller values show a corpus whose offsets\n"
    "                     do not fit\n"
    "  --deal-max-docs N  datasets of at most N documents are dealt to the ranks; 0: all walked\n"
    "                     (docs/loader.md, \"Epochs: dealt and walked\"); default LoaderConfig's\n"
    "  --read-ahead-bytes N, --io-depth N, --io-engine auto|uring|threads  the Loader's reading\n"
    "                     (docs/loader.md, \"Reading from storage\"); default LoaderConfig's\n"
    "                     (--io-depth 0: 128 a node, shared by its ranks)\n"
    "  --direct-io auto|on|off  the Loader's O_DIRECT token reads; default on in cold mode (its\n"
    "                     corpus stands in for one larger than memory, where auto is on), else\n"
    "                     LoaderConfig's (auto)\n"
    "  --salt N           cold: draws the documents and fio's offsets of every measurement from N\n"
    "                     (printed with the table: it repeats a run's reads); default a new one\n"
    "                     each run, so that no run reads what an earlier one read, which the\n"
    "                     disk's host may still cache when the page cache is dropped\n";

uint64_t ParseCount(const std::string& flag, const std::string& text) {
  size_t used = 0;
  uint64_t value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  STOKER_CHECK(used == text.size() && !text.empty() && text[0] != '-' && value > 0, ConfigError,
               "{} takes a positive integer; got '{}'", flag, text);
  return value;
}

double ParseMilliseconds(const std::string& text) {
  size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  STOKER_CHECK(used == text.size() && value >= 0, ConfigError,
               "--step-ms takes a number of milliseconds >= 0; got '{}'", text);
  return value;
}

// The options that take a positive count, and the field each sets.
constexpr std::pair<std::string_view, uint64_t Options::*> kCountOptions[] = {
    {"--repeat", &Options::repeat},
    {"--seq-len", &Options::seq_len},
    {"--batch-size", &Options::batch_size},
    {"--tokens", &Options::tokens},
    {"--corpus-tokens", &Options::corpus_tokens},
    {"--files", &Options::files},
    {"--docs", &Options::docs},
    {"--batches", &Options::batches},
    {"--offset-cache-bytes", &Options::offset_cache_bytes},
    {"--read-ahead-bytes", &Options::read_ahead_bytes},
    {"--io-depth", &Options::io_depth},
    {"--salt", &Options::salt},
};

void SetOption(const std::string& flag, const std::string& value, Options* o) {
  for (const auto& [name, field] : kCountOptions) {
    if (flag == name) {
      o->*field = ParseCount(flag, value);
      return;
    }
  }
  if (flag == "--mode") {
    o->mode = value;
  } else if (flag == "--dir") {
    o->dir = value;
  } else if (flag == "--io-engine") {
    o->io_engine = ParseIoEngine(value);
  } else if (flag == "--direct-io") {
    o->direct_io = ParseDirectIo(value);
  } else if (flag == "--step-ms") {
    o->step_ms = ParseMilliseconds(value);
  } else if (flag == "--deal-max-docs") {  // 0 is a value: every dataset walked
    o->deal_max_docs = value == "0" ? 0 : ParseCount(flag, value);
  } else {
    throw ConfigError(fmt::format("unknown option '{}'", flag));
  }
}

// The defaults that depend on the mode, where the command line gave none.
void PutModeDefaults(Options* o) {
  const bool cold = o->mode == "cold";
  if (o->repeat == 0) o->repeat = cold ? 3 : 5;
  if (o->tokens == 0) o->tokens = cold ? 40'000'000 : 100'000'000;
  if (o->corpus_tokens == 0) o->corpus_tokens = cold ? 1'000'000'000 : 600'000'000;
  if (!o->direct_io) o->direct_io = cold ? DirectIo::kOn : LoaderConfig{}.direct_io;
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    if (flag == "--help" || flag == "-h") {
      o.help = true;
      continue;
    }
    if (const size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    } else {
      STOKER_CHECK(i + 1 < argc, ConfigError, "{} needs a value (or unknown option)", flag);
      value = argv[++i];
    }
    SetOption(flag, value, &o);
  }
  STOKER_CHECK(o.help || o.mode == "throughput" || o.mode == "first-batch" || o.mode == "memory" ||
                   o.mode == "cold",
               ConfigError, "--mode must be throughput, first-batch, memory or cold; got '{}'",
               o.mode);
  STOKER_CHECK(o.files % 4 == 0 && !o.dir.empty(), ConfigError,
               "--files must be a multiple of 4 and --dir non-empty");
  PutModeDefaults(&o);
  return o;
}

std::string Marker(const SynthSpec& spec) {
  std::string text =
      fmt::format("bench_loader v1 files={} seed={} vocab={}", spec.files, spec.seed, spec.vocab);
  for (const auto& d : spec.datasets) {
    text += fmt::format(" {}:{}:{}", d.name, d.tokens, d.mean_doc_len);
  }
  return text + "\n";
}

// Collective: file i read whole by rank i mod W, so the next measurement reads the page cache.
void Warm(const mpi::Comm& comm, const CorpusTable& table) {
  ReadFilesWhole(table, comm.rank(), comm.size());
  comm.Barrier();
}

// User + system seconds this process has used so far, every thread of it.
double CpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

}  // namespace

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<double> PerRank(const mpi::Comm& comm, double value) {
  std::vector<double> all(comm.size(), 0.0);
  all[comm.rank()] = value;
  comm.SumInPlace(all);
  return all;
}

bool EnsureCorpus(const mpi::Comm& comm, const SynthSpec& spec) {
  std::string complete = "0";
  if (comm.rank() == 0) {
    std::ifstream in(spec.out + "/.bench-complete");
    std::stringstream text;
    text << in.rdbuf();
    if (in.good() && text.str() == Marker(spec)) complete = "1";
  }
  comm.Broadcast(&complete, 0);
  if (complete == "1") return false;
  const auto start = Clock::now();
  const SynthStats stats = SynthesizeCorpus(comm, spec);
  mpi::FailTogether(comm, [&] {
    if (comm.rank() == 0) std::ofstream(spec.out + "/.bench-complete") << Marker(spec);
  });
  if (comm.rank() == 0) {
    std::printf("# made %s: %llu files, %llu docs, %llu tokens, %.2f GB in %.1f s\n",
                spec.out.c_str(), static_cast<unsigned long long>(stats.files),
                static_cast<unsigned long long>(stats.docs),
                static_cast<unsigned long long>(stats.tokens), stats.bytes / 1e9, Since(start));
  }
  return true;
}

uint64_t ReadFilesWhole(const CorpusTable& table, size_t first, size_t step) {
  std::vector<char> buffer(4 << 20);
  uint64_t total = 0;
  for (size_t i = first; i < table.shards.size(); i += step) {
    const std::string path = table.root + "/" + table.shards[i].path;
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    STOKER_CHECK(fd, IoError, "cannot open {}: {}", path, std::strerror(errno));
    for (uint64_t at = 0;;) {  // ReadAt stops short only at the end or at an error
      const ReadResult read = ReadAt(fd.get(), at, buffer.size(), buffer.data(), path);
      STOKER_CHECK(read.error == 0, IoError, "cannot read {} at byte {}: {}", path, at + read.bytes,
                   std::strerror(read.error));
      at += read.bytes;
      total += read.bytes;
      if (read.bytes < buffer.size()) break;
    }
  }
  return total;
}

LoaderConfig ConfigFor(const Options& o, const std::string& root) {
  return LoaderConfig{.data = root,
                      .seq_len = o.seq_len,
                      .batch_size = o.batch_size,
                      .seed = 1,
                      .deal_max_docs = o.deal_max_docs,
                      .read_ahead_bytes = o.read_ahead_bytes,
                      .io_depth = static_cast<uint32_t>(o.io_depth),
                      .io_engine = o.io_engine,
                      .direct_io = o.direct_io.value_or(LoaderConfig{}.direct_io),
                      .offset_cache_bytes = o.offset_cache_bytes};
}

Rate RunLoader(const mpi::Comm& comm, const LoaderConfig& config, uint64_t target, double step_ms) {
  Rate rate;
  auto start = Clock::now();
  Loader loader(comm.get(), config);
  rate.setup = Since(start);
  comm.Barrier();
  const uint64_t batch_tokens = config.batch_size * (config.seq_len + 1);
  const double cpu = CpuSeconds();
  start = Clock::now();
  while (rate.tokens < target) {
    const auto asked = Clock::now();
    const std::optional<Batch> batch = loader.Next();
    rate.wait += Since(asked);
    STOKER_CHECK(batch && batch->tokens.size() == batch_tokens, InternalError,
                 "rank {}: a batch of {} tokens, expected {}", comm.rank(),
                 batch ? batch->tokens.size() : 0, batch_tokens);
    rate.tokens += batch->tokens.size();
    if (step_ms > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(step_ms));
    }
  }
  rate.seconds = Since(start);
  rate.cpu = CpuSeconds() - cpu;
  return rate;
}

namespace {

// ---- throughput ----------------------------------------------------------------------------

// Baseline (a): the h5 layer as it is: every ReadRaw opens the array and its type and space.
class ReadRawDocs {
 public:
  explicit ReadRawDocs(const CorpusTable& table) {
    for (const ShardInfo& s : table.shards) {
      files_.push_back(h5::File::OpenReadOnly(table.root + "/" + s.path));
    }
  }
  void Offsets(size_t f, uint64_t doc, uint64_t* out) {
    files_[f].ReadRaw("/doc_offsets", doc, 2, out);
  }
  void Tokens(size_t f, uint64_t begin, uint64_t count, void* out) {
    files_[f].ReadRaw("/tokens", begin, count, out);
  }

 private:
  std::vector<h5::File> files_;
};

// Baseline (b): plain HDF5 at its best: both arrays of every file opened once, then one
// hyperslab selection and one H5Dread in the file's own type per read.
class Hdf5Docs {
 public:
  explicit Hdf5Docs(const CorpusTable& table) {
    for (const ShardInfo& s : table.shards) {
      const std::string path = table.root + "/" + s.path;
      Open& f = files_.emplace_back();
      const hid_t access = H5Pcreate(H5P_FILE_ACCESS);
      H5Pset_sieve_buf_size(access, 0);  // the default 64 KiB makes every small read 64 KiB
      f.file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, access);
      H5Pclose(access);
      f.offsets = f.file < 0 ? -1 : H5Dopen2(f.file, "/doc_offsets", H5P_DEFAULT);
      f.tokens = f.file < 0 ? -1 : H5Dopen2(f.file, "/tokens", H5P_DEFAULT);
      f.offsets_space = f.offsets < 0 ? -1 : H5Dget_space(f.offsets);
      f.tokens_space = f.tokens < 0 ? -1 : H5Dget_space(f.tokens);
      const hid_t type = f.tokens < 0 ? -1 : H5Dget_type(f.tokens);
      f.token_type = type < 0 ? -1 : H5Tget_native_type(type, H5T_DIR_ASCEND);
      if (type >= 0) H5Tclose(type);
      STOKER_CHECK(f.offsets_space >= 0 && f.tokens_space >= 0 && f.token_type >= 0, Hdf5Error,
                   "{}: cannot open /doc_offsets and /tokens with HDF5", path);
    }
  }
  ~Hdf5Docs() {
    for (const Open& f : files_) {
      for (hid_t id : {f.offsets_space, f.tokens_space}) {
        if (id >= 0) H5Sclose(id);
      }
      if (f.token_type >= 0) H5Tclose(f.token_type);
      for (hid_t id : {f.offsets, f.tokens}) {
        if (id >= 0) H5Dclose(id);
      }
      if (f.file >= 0) H5Fclose(f.file);
    }
  }
  void Offsets(size_t f, uint64_t doc, uint64_t* out) {
    Read(files_[f].offsets, files_[f].offsets_space, H5T_NATIVE_UINT64, doc, 2, out);
  }
  void Tokens(size_t f, uint64_t begin, uint64_t count, void* out) {
    Read(files_[f].tokens, files_[f].tokens_space, files_[f].token_type, begin, count, out);
  }

 private:
  struct Open {
    hid_t file = -1, offsets = -1, tokens = -1, offsets_space = -1, tokens_space = -1;
    hid_t token_type = -1;
  };
  static void Read(hid_t dset, hid_t space, hid_t type, uint64_t start, uint64_t count, void* out) {
    const hsize_t offset[1] = {start}, extent[1] = {count};
    const hid_t memory = H5Screate_simple(1, extent, nullptr);
    const bool ok =
        memory >= 0 &&
        H5Sselect_hyperslab(space, H5S_SELECT_SET, offset, nullptr, extent, nullptr) >= 0 &&
        H5Dread(dset, type, memory, space, H5P_DEFAULT, out) >= 0;
    if (memory >= 0) H5Sclose(memory);
    STOKER_CHECK(ok, Hdf5Error, "H5Dread of [{}, {}) failed", start, start + count);
  }
  std::vector<Open> files_;
};

// Baseline (c): the loader's own read primitive (pread at the arrays' byte offsets), no logic.
class PreadDocs {
 public:
  explicit PreadDocs(const CorpusTable& table) {
    for (const ShardInfo& s : table.shards) {
      files_.push_back(std::make_unique<ShardReader>(table.root, s));
    }
  }
  void Offsets(size_t f, uint64_t doc, uint64_t* out) { files_[f]->ReadOffsets(doc, 2, out); }
  void Tokens(size_t f, uint64_t begin, uint64_t count, void* out) {
    files_[f]->ReadTokensRaw(begin, count, out);
  }

 private:
  std::vector<std::unique_ptr<ShardReader>> files_;
};

// One measured quantity: per rank and summed over the ranks, one entry per timed run.
struct Series {
  std::vector<std::vector<double>> per_rank;
  std::vector<double> total;
  void Add(const std::vector<double>& values) {
    per_rank.resize(values.size());
    for (size_t r = 0; r < values.size(); ++r) per_rank[r].push_back(values[r]);
    total.push_back(std::accumulate(values.begin(), values.end(), 0.0));
  }
};

// The loader as configured, and with every document boundary field (stoker/batch.h) as well.
constexpr const char* kMeasures[] = {"h5_readraw", "hdf5", "pread", "loader", "boundaries"};
constexpr size_t kLoader = 3, kBoundaries = 4;

void PrintThroughput(int ranks, const std::vector<Series>& series, const Series& wait,
                     const Series& cores, const std::vector<double>& setup) {
  auto line = [&](const char* who, auto pick) {
    std::string text = fmt::format("throughput ranks={} {}", ranks, who);
    for (size_t m = 0; m < series.size(); ++m) {
      text += fmt::format(" {}={:.1f}", kMeasures[m], Median(pick(series[m])) / 1e6);
    }
    const double loader = Median(pick(series[kLoader]));
    for (size_t m = 0; m < kLoader; ++m) {
      text += fmt::format(" loader/{}={:.2f}", kMeasures[m], loader / Median(pick(series[m])));
    }
    return text +
           fmt::format(" boundaries/loader={:.2f}", Median(pick(series[kBoundaries])) / loader);
  };
  for (int r = 0; r < ranks; ++r) {
    std::printf(
        "%s wait_fraction=%.3f loader_cores=%.2f\n",
        line(fmt::format("rank={}", r).c_str(), [r](const Series& s) { return s.per_rank[r]; })
            .c_str(),
        Median(wait.per_rank[r]), Median(cores.per_rank[r]));
  }
  const auto& l = series[kLoader].total;
  std::printf("%s loader_range=[%.1f..%.1f] loader_setup_s=%.3f\n",
              line("total", [](const Series& s) { return s.total; }).c_str(),
              *std::min_element(l.begin(), l.end()) / 1e6,
              *std::max_element(l.begin(), l.end()) / 1e6, Median(setup));
}

void Throughput(const mpi::Comm& comm, const Options& o) {
  const std::string root = fmt::format("{}/throughput-{}", o.dir, o.corpus_tokens);
  SynthSpec spec{.out = root, .files = 8, .seed = 1, .force = true};
  for (const char* name : {"books", "code", "web"}) {
    spec.datasets.push_back({name, o.corpus_tokens / 3, 1000.0});
  }
  EnsureCorpus(comm, spec);
  const CorpusTable table = DiscoverCorpus(comm, root);
  const LoaderConfig config = ConfigFor(o, root);
  LoaderConfig with_boundaries = config;
  with_boundaries.boundaries = BoundaryFields::All();
  std::vector<Series> series(std::size(kMeasures));
  Series wait, cores;
  std::vector<double> setup;
  for (uint64_t rep = 0; rep <= o.repeat; ++rep) {  // rep 0: untimed warm-up, a tenth as long
    const uint64_t target = rep == 0 ? o.tokens / 10 : o.tokens;
    const uint64_t key = DeriveKey(1, "baseline", comm.rank(), rep);
    std::vector<Rate> rates;
    Warm(comm, table);
    rates.push_back(ReadRandomDocs<ReadRawDocs>(table, target, key));
    Warm(comm, table);
    rates.push_back(ReadRandomDocs<Hdf5Docs>(table, target, key));
    Warm(comm, table);
    rates.push_back(ReadRandomDocs<PreadDocs>(table, target, key));
    Warm(comm, table);
    rates.push_back(RunLoader(comm, config, target, o.step_ms));
    Warm(comm, table);
    rates.push_back(RunLoader(comm, with_boundaries, target, o.step_ms));
    std::vector<std::vector<double>> per_rank;
    for (const Rate& r : rates) per_rank.push_back(PerRank(comm, r.tokens / r.seconds));
    const Rate& loader = rates[kLoader];
    const auto waited = PerRank(comm, loader.wait / loader.seconds);
    const auto used = PerRank(comm, loader.cpu / loader.seconds);
    const double slowest_setup = comm.Max(static_cast<uint64_t>(loader.setup * 1e9)) * 1e-9;
    if (rep == 0) continue;
    for (size_t m = 0; m < series.size(); ++m) series[m].Add(per_rank[m]);
    wait.Add(waited);
    cores.Add(used);
    setup.push_back(slowest_setup);
  }
  if (comm.rank() != 0) return;
  std::printf(
      "# throughput: %zu files, %llu docs, %llu tokens; %llu tokens per rank per run, "
      "%llu runs, step %.1f ms, offset cache %llu bytes; medians in M tokens/s\n",
      table.shards.size(), static_cast<unsigned long long>(table.total_docs()),
      static_cast<unsigned long long>(table.total_tokens()),
      static_cast<unsigned long long>(o.tokens), static_cast<unsigned long long>(o.repeat),
      o.step_ms, static_cast<unsigned long long>(o.offset_cache_bytes));
  PrintThroughput(comm.size(), series, wait, cores, setup);
}

// ---- first batch ---------------------------------------------------------------------------

void FirstBatch(const mpi::Comm& comm, const Options& o) {
  const std::string root = fmt::format("{}/first-batch-{}", o.dir, o.files);
  SynthSpec spec{
      .out = root, .files = static_cast<uint32_t>(o.files / 4), .seed = 2, .force = true};
  for (const char* name : {"a", "b", "c", "d"}) {
    spec.datasets.push_back({name, o.files / 4 * 2000, 200.0});
  }
  EnsureCorpus(comm, spec);
  const CorpusTable table = DiscoverCorpus(comm, root);
  const LoaderConfig config = ConfigFor(o, root);
  std::vector<double> construct, first;
  for (uint64_t rep = 0; rep <= o.repeat; ++rep) {  // rep 0: untimed warm-up
    Warm(comm, table);
    const auto start = Clock::now();
    double built = 0, done = 0;
    {
      Loader loader(comm.get(), config);
      built = Since(start);
      STOKER_CHECK(loader.Next().has_value(), InternalError, "no first batch");
      done = Since(start);
    }
    const double max_built = comm.Max(static_cast<uint64_t>(built * 1e9)) * 1e-9;
    const double max_done = comm.Max(static_cast<uint64_t>(done * 1e9)) * 1e-9;
    if (rep == 0) continue;
    construct.push_back(max_built);
    first.push_back(max_done);
  }
  if (comm.rank() != 0) return;
  std::printf("# first-batch: %zu files, %llu docs, %llu tokens; slowest rank per run, %llu runs\n",
              table.shards.size(), static_cast<unsigned long long>(table.total_docs()),
              static_cast<unsigned long long>(table.total_tokens()),
              static_cast<unsigned long long>(o.repeat));
  std::printf("first-batch ranks=%d files=%zu construct_s=%.3f first_batch_s=%.3f [%.3f..%.3f]\n",
              comm.size(), table.shards.size(), Median(construct), Median(first),
              *std::min_element(first.begin(), first.end()),
              *std::max_element(first.begin(), first.end()));
}

// ---- memory --------------------------------------------------------------------------------

// VmRSS and VmHWM of this process in MB (10^6 bytes).
std::pair<double, double> ResidentMb() {
  std::ifstream status("/proc/self/status");
  double rss = 0, hwm = 0;
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("VmRSS:")) rss = std::stod(line.substr(6)) * 1024 / 1e6;
    if (line.starts_with("VmHWM:")) hwm = std::stod(line.substr(6)) * 1024 / 1e6;
  }
  return {rss, hwm};
}

void Memory(const mpi::Comm& comm, const Options& o) {
  const std::string root = fmt::format("{}/memory-{}", o.dir, o.docs);
  SynthSpec spec{.out = root, .files = 4, .seed = 3, .force = true};
  for (const char* name : {"books", "code", "web"}) {
    spec.datasets.push_back({name, o.docs * 4 / 3, 4.0});
  }
  const bool made = EnsureCorpus(comm, spec);
  const CorpusTable table = DiscoverCorpus(comm, root);
  Warm(comm, table);
  ::malloc_trim(0);
  std::ofstream("/proc/self/clear_refs") << "5";  // VmHWM := VmRSS
  const auto [rss0, hwm0] = ResidentMb();
  const auto start = Clock::now();
  Loader loader(comm.get(), ConfigFor(o, root));
  for (uint64_t b = 0; b < o.batches; ++b) {
    STOKER_CHECK(loader.Next().has_value(), InternalError, "no batch {}", b);
  }
  const double seconds = Since(start);
  const auto [rss1, hwm1] = ResidentMb();
  const std::vector<std::vector<double>> v = {PerRank(comm, rss0), PerRank(comm, hwm0),
                                              PerRank(comm, rss1), PerRank(comm, hwm1),
                                              PerRank(comm, seconds)};
  if (comm.rank() != 0) return;
  std::printf("# memory: %zu files, %llu docs, %llu tokens; %llu batches; MB = 10^6 bytes%s\n",
              table.shards.size(), static_cast<unsigned long long>(table.total_docs()),
              static_cast<unsigned long long>(table.total_tokens()),
              static_cast<unsigned long long>(o.batches),
              made ? "; CORPUS MADE IN THIS PROCESS: run again for clean figures" : "");
  for (int r = 0; r < comm.size(); ++r) {
    std::printf(
        "memory ranks=%d rank=%d docs=%llu before_rss=%.1f before_hwm=%.1f after_rss=%.1f "
        "after_hwm=%.1f hwm_growth=%.1f after_hwm/before_hwm=%.3f seconds=%.2f\n",
        comm.size(), r, static_cast<unsigned long long>(table.total_docs()), v[0][r], v[1][r],
        v[2][r], v[3][r], v[3][r] - v[1][r], v[3][r] / v[1][r], v[4][r]);
  }
}

}  // namespace
}  // namespace stoker::bench

int main(int argc, char** argv) {
  stoker::mpi::Session session(&argc, &argv);
  int exit_code = 0;
  {
    stoker::mpi::Comm world(MPI_COMM_WORLD);
    try {
      const stoker::bench::Options options = stoker::bench::ParseArgs(argc, argv);
      if (options.help) {
        if (world.rank() == 0) std::fputs(stoker::bench::kUsage, stdout);
      } else if (options.mode == "throughput") {
        stoker::bench::Throughput(world, options);
      } else if (options.mode == "first-batch") {
        stoker::bench::FirstBatch(world, options);
      } else if (options.mode == "memory") {
        stoker::bench::Memory(world, options);
      } else {
        exit_code = stoker::bench::Cold(world, options);
      }
    } catch (const stoker::ConfigError& e) {
      if (world.rank() == 0) {
        std::fprintf(stderr, "bench_loader: %s\n%s", e.what(), stoker::bench::kUsage);
      }
      exit_code = 2;
    } catch (const stoker::Error& e) {
      if (!e.collective()) {
        std::fprintf(stderr, "bench_loader: rank %d: %s\n", world.rank(), e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      if (world.rank() == 0) std::fprintf(stderr, "bench_loader: %s\n", e.what());
      exit_code = 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_loader: rank %d: %s\n", world.rank(), e.what());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  return exit_code;
}
