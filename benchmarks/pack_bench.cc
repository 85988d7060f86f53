// Throughput of `stoker pack` (PackDataset) in one process: MB/s of input and tokens/s, for text
// files (byte tokenizer), jsonl token-id arrays and jsonl strings. The inputs (~64 MB each kind)
// are generated once in a temporary folder; every iteration packs them into the same output
// folder (--force).
//
// The baseline, measured in the same iteration (untimed by the framework, timed by hand): the
// plain I/O floor, which reads every input with read() and writes as many bytes to one output
// file with write(), in 1 MiB blocks, with no parsing and no HDF5. Counters per benchmark:
//   pack_MB/s   pack's input MB (10^6 bytes) per second (bytes_per_second is the same in MiB/s);
//   floor_MB/s  the floor's input MB per second;
//   x_floor     pack's throughput as a fraction of the floor's (floor seconds / pack seconds).
// Medians by default (5 repetitions, aggregates only; flags given on the command line win).
// Run: build/benchmarks/bench_pack [--benchmark_filter=Text]. Figures, not a test.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/check.h"
#include "mpi/comm.h"
#include "order/random.h"
#include "tools/pack.h"

namespace {

namespace fs = std::filesystem;
using stoker::CounterRng;

constexpr uint64_t kBytesPerKind = 64u << 20;
constexpr int kFilesPerKind = 16;

std::string& Folder() {
  static std::string folder = [] {
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base ? base : "/tmp") + "/stoker-pack-bench-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) std::perror("mkdtemp"), std::exit(1);
    return templ;
  }();
  return folder;
}

// English-like text: words of 1 to 10 lowercase letters, lines of about 80 characters (one line
// when `newlines` is false: a JSON string).
std::string TextFile(CounterRng* rng, uint64_t bytes, bool newlines = true) {
  std::string text;
  text.reserve(bytes);
  while (text.size() < bytes) {
    const uint64_t word = 1 + rng->NextBelow(10);
    for (uint64_t i = 0; i < word; ++i) text.push_back(static_cast<char>('a' + rng->NextBelow(26)));
    text.push_back(newlines && text.size() % 80 >= 70 ? '\n' : ' ');
  }
  return text;
}

// jsonl lines of about 1,000 tokens: ids in [0, 50304) or a string of text.
std::string JsonlFile(CounterRng* rng, uint64_t bytes, bool strings) {
  std::string text;
  text.reserve(bytes + 16384);
  while (text.size() < bytes) {
    const uint64_t length = 200 + rng->NextBelow(1600);
    if (strings) {
      text += "{\"id\": 1, \"text\": \"" + TextFile(rng, length * 4, false) + "\"}\n";
      continue;
    }
    text += "{\"id\": 1, \"tokens\": [";
    for (uint64_t i = 0; i < length; ++i) {
      text += std::to_string(rng->NextBelow(50304));
      text += i + 1 < length ? "," : "]}\n";
    }
  }
  return text;
}

// The inputs of one kind ("text", "ids", "strings"), generated on first use.
const std::vector<std::string>& Inputs(const std::string& kind) {
  static std::map<std::string, std::vector<std::string>> inputs;
  auto& paths = inputs[kind];
  if (!paths.empty()) return paths;
  CounterRng rng(stoker::DeriveKey(1, kind));
  for (int f = 0; f < kFilesPerKind; ++f) {
    const uint64_t bytes = kBytesPerKind / kFilesPerKind;
    const bool text = kind == "text";
    paths.push_back(fmt::format("{}/{}-{:02}.{}", Folder(), kind, f, text ? "txt" : "jsonl"));
    std::ofstream out(paths.back(), std::ios::binary);
    out << (text ? TextFile(&rng, bytes) : JsonlFile(&rng, bytes, kind == "strings"));
  }
  return paths;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A file descriptor closed on scope exit (errors thrown mid-copy must not leak it).
struct Fd {
  explicit Fd(int fd) : fd(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int fd;
};

// The plain I/O floor of one pass over `inputs`: read() every file and write() the bytes read to
// `out`, in 1 MiB blocks. Returns the seconds it took; throws stoker::IoError.
double CopyFloor(const std::vector<std::string>& inputs, const std::string& out) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<char> block(1 << 20);
  Fd to(::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  STOKER_CHECK(to.fd >= 0, IoError, "cannot create {}: {}", out, std::strerror(errno));
  for (const auto& path : inputs) {
    const Fd from(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    STOKER_CHECK(from.fd >= 0, IoError, "cannot open {}: {}", path, std::strerror(errno));
    for (ssize_t n; (n = ::read(from.fd, block.data(), block.size())) != 0;) {
      STOKER_CHECK(n > 0, IoError, "cannot read {}: {}", path, std::strerror(errno));
      for (ssize_t done = 0, w; done < n; done += w) {
        w = ::write(to.fd, block.data() + done, n - done);
        STOKER_CHECK(w > 0, IoError, "cannot write {}: {}", out, std::strerror(errno));
      }
    }
  }
  const int closed = ::close(std::exchange(to.fd, -1));
  STOKER_CHECK(closed == 0, IoError, "cannot close {}: {}", out, std::strerror(errno));
  return SecondsSince(start);
}

void BM_Pack(benchmark::State& state, const std::string& kind) {
  const stoker::mpi::Comm self(MPI_COMM_SELF);
  stoker::PackSpec spec;
  spec.inputs = Inputs(kind);
  spec.out = Folder() + "/out/" + kind;
  spec.field = kind == "strings" ? "text" : "tokens";
  spec.force = true;
  const std::string floor_out = Folder() + "/floor-" + kind + ".bin";
  uint64_t bytes = 0, tokens = 0;
  double pack_seconds = 0, floor_seconds = 0;
  for (auto _ : state) {
    try {
      const auto start = std::chrono::steady_clock::now();
      const stoker::PackStats stats = stoker::PackDataset(self, spec);
      pack_seconds += SecondsSince(start);
      bytes += stats.input_bytes;
      tokens += stats.tokens;
      state.PauseTiming();
      floor_seconds += CopyFloor(spec.inputs, floor_out);
      state.ResumeTiming();
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      return;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.counters["input_MB"] = static_cast<double>(bytes) / state.iterations() / 1e6;
  state.counters["pack_MB/s"] = static_cast<double>(bytes) / pack_seconds / 1e6;
  state.counters["floor_MB/s"] = static_cast<double>(bytes) / floor_seconds / 1e6;
  state.counters["x_floor"] = floor_seconds / pack_seconds;
}

BENCHMARK_CAPTURE(BM_Pack, Text, std::string("text"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Pack, JsonlIds, std::string("ids"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Pack, JsonlStrings, std::string("strings"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

// Medians unless the command line says otherwise: the defaults go first, so later flags win.
int main(int argc, char** argv) {
  stoker::mpi::Session session(&argc, &argv);
  std::vector<char*> args(argv, argv + argc);
  char repetitions[] = "--benchmark_repetitions=5";
  char aggregates[] = "--benchmark_report_aggregates_only=true";
  args.insert(args.begin() + 1, {repetitions, aggregates});
  int args_count = static_cast<int>(args.size());
  args.push_back(nullptr);  // argv[argc] is null
  benchmark::Initialize(&args_count, args.data());
  if (benchmark::ReportUnrecognizedArguments(args_count, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  fs::remove_all(Folder(), ec);
  return 0;
}
