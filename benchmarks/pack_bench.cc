// Throughput of `stoker pack` (PackDataset) in one process: MB/s of input and tokens/s, for text
// files (byte tokenizer), jsonl token-id arrays and jsonl strings. The inputs (~64 MB each kind)
// are generated once in a temporary folder; every iteration packs them into the same output
// folder (--force). Run: build/bench_pack [--benchmark_filter=Text]. Figures, not a test.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/random.h"
#include "io/pack.h"
#include "mpi/comm.h"

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

void BM_Pack(benchmark::State& state, const std::string& kind) {
  const stoker::mpi::Comm self(MPI_COMM_SELF);
  stoker::PackSpec spec;
  spec.inputs = Inputs(kind);
  spec.out = Folder() + "/out/" + kind;
  spec.field = kind == "strings" ? "text" : "tokens";
  spec.force = true;
  uint64_t bytes = 0, tokens = 0;
  for (auto _ : state) {
    try {
      const stoker::PackStats stats = stoker::PackDataset(self, spec);
      bytes += stats.input_bytes;
      tokens += stats.tokens;
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      return;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.counters["input_MB"] = static_cast<double>(bytes) / state.iterations() / 1e6;
}

BENCHMARK_CAPTURE(BM_Pack, Text, std::string("text"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Pack, JsonlIds, std::string("ids"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Pack, JsonlStrings, std::string("strings"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  stoker::mpi::Session session(&argc, &argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  fs::remove_all(Folder(), ec);
  return 0;
}
