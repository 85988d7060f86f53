// What the modes of bench_loader share: its options, the corpus each mode makes once, medians and
// per-rank figures, reading files whole, random whole-document reads and the timed Loader run.
// loader_bench.cc defines them (and the modes throughput, first-batch and memory); cold_bench.cc
// is the mode cold. Calls marked collective are made by every rank of the communicator; the rest
// are local to the rank. Single-threaded, like the program.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mpi/comm.h"
#include "order/random.h"
#include "stoker/corpus.h"
#include "stoker/loader.h"
#include "tokens/token_type.h"
#include "tools/synth.h"

namespace stoker::bench {

// The command line; kUsage in loader_bench.cc explains every option. repeat, tokens and
// corpus_tokens default by mode: 0 here means not given, and ParseArgs puts the mode's default.
struct Options {
  std::string mode;
  std::string dir = "/tmp/stoker-loader-bench";
  uint64_t repeat = 0, tokens = 0, corpus_tokens = 0;
  uint64_t seq_len = 4096, batch_size = 8;
  uint64_t files = 10'000, docs = 1'000'000, batches = 200;
  uint64_t offset_cache_bytes = LoaderConfig{}.offset_cache_bytes;
  uint64_t deal_max_docs = LoaderConfig{}.deal_max_docs;
  uint64_t read_ahead_bytes = LoaderConfig{}.read_ahead_bytes;
  uint64_t io_depth = LoaderConfig{}.io_depth;
  IoEngine io_engine = LoaderConfig{}.io_engine;
  std::optional<DirectIo> direct_io;  // unset: on in cold mode, else LoaderConfig's
  double step_ms = 0;
  uint64_t salt = 0;  // cold: what the reads are drawn from; 0: a new salt each run
  bool help = false;
};

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point start);

double Median(std::vector<double> v);

// Collective: every rank's `value`, indexed by rank, on every rank.
std::vector<double> PerRank(const mpi::Comm& comm, double value);

// Collective. Makes the corpus unless an earlier run left it complete; true when it made it.
bool EnsureCorpus(const mpi::Comm& comm, const SynthSpec& spec);

// Reads files first, first + step, first + 2 step, ... of the table whole, front to back in
// 4 MiB reads; returns the bytes read. IoError naming the file when one cannot be read.
uint64_t ReadFilesWhole(const CorpusTable& table, size_t first, size_t step);

// The Loader's configuration from the options: seq_len, batch_size, offset_cache_bytes,
// read_ahead_bytes, io_depth, io_engine, direct_io, seed 1.
LoaderConfig ConfigFor(const Options& o, const std::string& root);

struct Rate {
  double seconds = 0;
  uint64_t tokens = 0;
  double wait = 0;   // loader: seconds inside Next()
  double setup = 0;  // loader: seconds of the construction
  double cpu = 0;    // loader: user + system seconds of the process (every thread) while timed
};

// Collective (construction, untimed). Pulls whole batches until `target` tokens are delivered,
// sleeping `step_ms` after each batch as a trainer's step would.
Rate RunLoader(const mpi::Comm& comm, const LoaderConfig& config, uint64_t target, double step_ms);

// Uniformly random documents of the whole corpus, whole, in the file's own type, until `target`
// tokens are read, through Reader(table, reader_args...) with Offsets(file, doc, out[2]) and
// Tokens(file, begin, count, out). Opening the files (the reader's construction) is not timed.
template <typename Reader, typename... ReaderArgs>
Rate ReadRandomDocs(const CorpusTable& table, uint64_t target, uint64_t key,
                    const ReaderArgs&... reader_args) {
  Reader reader(table, reader_args...);
  std::vector<uint64_t> first_doc;  // per file: its first document number in the corpus
  uint64_t docs = 0;
  for (const ShardInfo& s : table.shards) {
    first_doc.push_back(docs);
    docs += s.docs;
  }
  CounterRng rng(key);
  std::vector<char> buffer;
  Rate rate;
  const auto start = Clock::now();
  while (rate.tokens < target) {
    const uint64_t doc = rng.NextBelow(docs);
    const size_t f =
        std::upper_bound(first_doc.begin(), first_doc.end(), doc) - first_doc.begin() - 1;
    uint64_t offsets[2];
    reader.Offsets(f, doc - first_doc[f], offsets);
    const uint64_t length = offsets[1] - offsets[0];
    if (length == 0) continue;
    const size_t bytes = length * TokenTypeSize(table.shards[f].token_type);
    if (buffer.size() < bytes) buffer.resize(bytes);
    reader.Tokens(f, offsets[0], length, buffer.data());
    rate.tokens += length;
  }
  rate.seconds = Since(start);
  return rate;
}

}  // namespace stoker::bench
