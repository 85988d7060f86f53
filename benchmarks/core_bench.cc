// bench_core: the cost of the loader's pure core, in one process (no MPI ranks, no I/O).
//
//   PermutationAt/{random,sequential}/n   Permutation::At for n = 10^3, 10^6, 10^9: one index per
//                                         iteration, so the Time column is nanoseconds per index.
//   MaterializedAt/{random,sequential}/n  the baseline: the same lookups in a std::vector<uint64_t>
//                                         holding a shuffled [0, n) (what an index-based shuffle
//                                         reads per index: n * 8 bytes per dataset and epoch), for
//                                         n = 10^6 (8 MB) and 10^8 (800 MB).
//   MaterializeShuffle/n                  building that vector (iota + Fisher-Yates with
//                                         CounterRng), per element: what the index costs to make
//                                         each epoch. The Time column is ns per element.
//   DeriveKey, PermutationConstruct       a key derivation (xxh3 of purpose + 3 words), and
//                                         DatasetOrder::Epoch (a DeriveKey and 6 round keys), both
//                                         paid per document by RowPlanner.
//   WidenTokens                           one batch (8 x 4,097) of uint16 tokens widened to int64
//                                         (tokens/token_type.h), as BatchReader does: items/s is
//                                         tokens per second.
//   RowPlanner/mean_len/world             RowPlanner::NextRow with a fake DocLocator (lengths
//                                         hashed from the document number, uniform in
//                                         [1, 2 * mean_len - 1]; no I/O): 3 datasets of 200 M
//                                         tokens each (weights 0.5, 0.3, 0.2), 65,536 logical
//                                         shards, seq_len 4096, rank 0 of `world`; EndBatch and
//                                         TakeDelta every 8 rows as the loader does. One row per
//                                         iteration; counters rows/s, docs/s (documents started)
//                                         and tokens/s (framed tokens placed in rows).
//   Lane/mean_len/lanes/walked            Lane::Take (mixing/lane.h) filling rows of 4,097 tokens
//                                         for lane 0 of `lanes`: 3 datasets (weights 0.5, 0.3,
//                                         0.2) of hashed lengths, dealt (every lane deals every
//                                         position) or walked (every lanes-th document); a step
//                                         every 8 rows. Counters as RowPlanner's.
//   PositionsOnly                         drawing one random position (xorshift64, multiply-shift):
//                                         included in every */random figure.
// Figures, not a test.
// Run: build/benchmarks/bench_core [--benchmark_filter=PermutationAt] [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "mixing/lane.h"
#include "mixing/mix_clock.h"
#include "order/order.h"
#include "order/permutation.h"
#include "order/random.h"
#include "packing/row_planner.h"
#include "state/loader_state.h"
#include "tokens/token_type.h"

namespace {

using stoker::CounterRng;
using stoker::Permutation;

constexpr uint64_t kKey = 0x5eed;

// Uniform positions in [0, n) from xorshift64 and a multiply-shift: ~2 ns, no table (a table of
// positions would keep a materialized index's working set small enough for the caches).
class RandomPositions {
 public:
  explicit RandomPositions(uint64_t n) : n_(n) {}
  uint64_t Next() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return static_cast<uint64_t>((static_cast<unsigned __int128>(state_) * n_) >> 64);
  }

 private:
  uint64_t n_;
  uint64_t state_ = 0x9E3779B97F4A7C15ull;
};

// The cost of drawing the random positions alone, to subtract from the */random figures.
void PositionsOnly(benchmark::State& state) {
  RandomPositions positions(static_cast<uint64_t>(state.range(0)));
  uint64_t sink = 0;
  for (auto _ : state) {
    sink ^= positions.Next();
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(state.iterations());
}

void PermutationAtRandom(benchmark::State& state) {
  const auto n = static_cast<uint64_t>(state.range(0));
  const Permutation permutation(n, kKey);
  RandomPositions positions(n);
  uint64_t sink = 0;
  for (auto _ : state) {
    sink ^= permutation.At(positions.Next());
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(state.iterations());
}

void PermutationAtSequential(benchmark::State& state) {
  const auto n = static_cast<uint64_t>(state.range(0));
  const Permutation permutation(n, kKey);
  uint64_t i = 0;
  uint64_t sink = 0;
  for (auto _ : state) {
    sink ^= permutation.At(i);
    if (++i == n) i = 0;
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(state.iterations());
}

// The index-based shuffle: iota, then Fisher-Yates from the top, with our own generator.
std::vector<uint64_t> Materialize(uint64_t n) {
  std::vector<uint64_t> index(n);
  std::iota(index.begin(), index.end(), uint64_t{0});
  CounterRng rng(kKey);
  for (uint64_t i = n - 1; i > 0; --i) std::swap(index[i], index[rng.NextBelow(i + 1)]);
  return index;
}

// Built once per size and kept (the random and sequential runs share it): the 10^8 vector takes
// seconds to build and 800 MB.
const std::vector<uint64_t>& MaterializedIndex(uint64_t n) {
  static std::map<uint64_t, std::vector<uint64_t>> built;
  auto it = built.find(n);
  if (it == built.end()) it = built.emplace(n, Materialize(n)).first;
  return it->second;
}

void MaterializedAtRandom(benchmark::State& state) {
  const auto n = static_cast<uint64_t>(state.range(0));
  const std::vector<uint64_t>& index = MaterializedIndex(n);
  RandomPositions positions(n);
  uint64_t sink = 0;
  for (auto _ : state) {
    sink ^= index[positions.Next()];
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(state.iterations());
  state.counters["index_MB"] = static_cast<double>(n * sizeof(uint64_t)) / 1e6;
}

void MaterializedAtSequential(benchmark::State& state) {
  const auto n = static_cast<uint64_t>(state.range(0));
  const std::vector<uint64_t>& index = MaterializedIndex(n);
  uint64_t i = 0;
  uint64_t sink = 0;
  for (auto _ : state) {
    sink ^= index[i];
    if (++i == n) i = 0;
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(state.iterations());
  state.counters["index_MB"] = static_cast<double>(n * sizeof(uint64_t)) / 1e6;
}

// One iteration builds a whole index; reported per element (items/s, and the counter).
void MaterializeShuffle(benchmark::State& state) {
  const auto n = static_cast<uint64_t>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(Materialize(n).data());
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
  state.counters["ns_per_element"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * static_cast<double>(n),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void DeriveKey(benchmark::State& state) {
  uint64_t epoch = 0;
  uint64_t sink = 0;
  for (auto _ : state) sink ^= stoker::DeriveKey(kKey, "epoch", epoch++);
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(state.iterations());
}

void PermutationConstruct(benchmark::State& state) {
  const stoker::DatasetOrder order(kKey, "web", 1'000'000, 65536);
  uint64_t epoch = 0;
  for (auto _ : state) benchmark::DoNotOptimize(order.Epoch(epoch++));  // out of line: not elided
  state.SetItemsProcessed(state.iterations());
}

// One batch's worth (8 rows of 4,097) of uint16 tokens widened to int64, as BatchReader does for
// every token it delivers.
void WidenTokens(benchmark::State& state) {
  constexpr size_t kTokens = 8 * 4097;
  std::vector<uint16_t> in(kTokens);
  CounterRng rng(kKey);
  for (uint16_t& t : in) t = static_cast<uint16_t>(rng.NextBelow(50304));
  std::vector<int64_t> out(kTokens);
  for (auto _ : state) {
    stoker::WidenTokens(stoker::TokenType::kUint16, in.data(), kTokens, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(kTokens));
}

uint64_t Hash(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Per iteration one row; EndBatch + TakeDelta every 8 rows, as the loader does. ramp 1: the
// weights change at every step (a ramp from step 0 to step 10^9), against constant weights.
void RowPlannerRows(benchmark::State& state) {
  const auto mean_len = static_cast<uint64_t>(state.range(0));
  const auto world = static_cast<uint64_t>(state.range(1));
  const bool ramp = state.range(2) != 0;
  constexpr uint64_t kTokensPerDataset = 200'000'000, kLogicalShards = 65536, kRowTokens = 4097;
  constexpr uint64_t kDocsPerFile = 1 << 20;
  stoker::PlannerConfig config{.seed = 1,
                               .logical_shards = kLogicalShards,
                               .world = world,
                               .rank = 0,
                               .row_tokens = kRowTokens,
                               .bos = false};
  for (int d = 0; d < 3; ++d) {
    config.datasets.push_back({"ds-" + std::to_string(d), kTokensPerDataset / mean_len});
  }
  config.schedule =
      ramp
          ? stoker::MixSchedule({{.step = 0, .weights = {0.5, 0.3, 0.2}},
                                 {.step = 1'000'000'000, .ramp = true, .weights = {0.2, 0.3, 0.5}}})
          : stoker::MixSchedule::Constant({0.5, 0.3, 0.2});
  auto locate = [mean_len](uint32_t dataset, uint64_t doc) {
    const uint64_t length = 1 + Hash(doc ^ (uint64_t{dataset} << 56)) % (2 * mean_len - 1);
    return stoker::DocSpan{static_cast<uint32_t>(doc / kDocsPerFile), doc * mean_len, length};
  };
  stoker::RowPlanner planner(config, stoker::InitialRankState(3, kLogicalShards, world, 0), locate);
  std::vector<stoker::Segment> row;
  uint64_t docs = 0, rows = 0;
  for (auto _ : state) {
    planner.NextRow(&row);
    for (const stoker::Segment& s : row) docs += s.first == 0 ? 1 : 0;
    if (++rows % 8 == 0) {
      planner.EndBatch();
      benchmark::DoNotOptimize(planner.TakeDelta());
    }
  }
  state.counters["rows/s"] =
      benchmark::Counter(static_cast<double>(rows), benchmark::Counter::kIsRate);
  state.counters["docs/s"] =
      benchmark::Counter(static_cast<double>(docs), benchmark::Counter::kIsRate);
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(rows * kRowTokens), benchmark::Counter::kIsRate);
}

// A walk of lane 0 of `lanes` through every lanes-th document of a dataset, sizes hashed.
class StridedWalk : public stoker::LaneWalk {
 public:
  StridedWalk(uint64_t lanes, uint64_t mean_len) : lanes_(lanes), mean_len_(mean_len) {}
  stoker::Dealt Peek(uint32_t d) override {
    const uint64_t doc = taken_[d] * lanes_;
    return {.position = doc, .unit = doc, .size = 2 + Hash(doc ^ d) % (2 * mean_len_ - 1)};
  }
  void Advance(uint32_t d) override { ++taken_[d]; }

 private:
  uint64_t lanes_, mean_len_;
  std::map<uint32_t, uint64_t> taken_;
};

// Lane 0 of `lanes` fills rows of 4,097 tokens from three datasets (weights 0.5, 0.3, 0.2) of
// 200 M tokens / mean_len documents (at most 2^21) each, dealt or walked; a step every 8 rows.
// One row per iteration; counters rows/s, docs/s and tokens/s. Dealt, every lane deals every
// position: `lanes` positions a unit of its own.
void LaneRows(benchmark::State& state) {
  const auto mean_len = static_cast<uint64_t>(state.range(0));
  const auto lanes = static_cast<uint32_t>(state.range(1));
  const bool walked = state.range(2) != 0;
  constexpr uint64_t kRowTokens = 4097, kRowsPerStep = 8;
  const uint64_t docs = std::min<uint64_t>(200'000'000 / mean_len, uint64_t{1} << 21);
  std::vector<std::vector<uint64_t>> sizes(3, std::vector<uint64_t>(docs));
  std::vector<stoker::LaneDataset> datasets;
  for (uint32_t d = 0; d < 3; ++d) {
    for (uint64_t i = 0; i < docs; ++i) sizes[d][i] = 2 + Hash(i ^ d) % (2 * mean_len - 1);
    datasets.push_back({.sizes = sizes[d], .walked = walked, .key = d + 1, .tie = d});
  }
  const stoker::MixClock clock(stoker::MixSchedule::Constant({0.5, 0.3, 0.2}),
                               lanes * kRowsPerStep * kRowTokens);
  StridedWalk walk(lanes, mean_len);
  stoker::Lane lane(
      0, lanes, datasets, clock,
      {.dealers = std::vector<stoker::DealerState>(3, stoker::FirstDealerState(lanes))}, &walk);
  uint64_t rows = 0, units = 0;
  for (auto _ : state) {
    const uint64_t step = rows / kRowsPerStep;
    for (uint64_t room = kRowTokens; room > 0;) {
      const stoker::LanePiece piece = lane.Take(step, room);
      units += piece.first == 0 ? 1 : 0;
      room -= piece.count;
    }
    ++rows;
  }
  state.counters["rows/s"] =
      benchmark::Counter(static_cast<double>(rows), benchmark::Counter::kIsRate);
  state.counters["docs/s"] =
      benchmark::Counter(static_cast<double>(units), benchmark::Counter::kIsRate);
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(rows * kRowTokens), benchmark::Counter::kIsRate);
}

constexpr int64_t kThousand = 1'000, kMillion = 1'000'000, kBillion = 1'000'000'000;

BENCHMARK(PositionsOnly)->Arg(kBillion);
BENCHMARK(PermutationAtRandom)
    ->Name("PermutationAt/random")
    ->Arg(kThousand)
    ->Arg(kMillion)
    ->Arg(kBillion);
BENCHMARK(PermutationAtSequential)
    ->Name("PermutationAt/sequential")
    ->Arg(kThousand)
    ->Arg(kMillion)
    ->Arg(kBillion);
BENCHMARK(MaterializedAtRandom)->Name("MaterializedAt/random")->Arg(kMillion)->Arg(100 * kMillion);
BENCHMARK(MaterializedAtSequential)
    ->Name("MaterializedAt/sequential")
    ->Arg(kMillion)
    ->Arg(100 * kMillion);
BENCHMARK(MaterializeShuffle)->Arg(kMillion)->Unit(benchmark::kMillisecond);
BENCHMARK(DeriveKey);
BENCHMARK(WidenTokens)->Unit(benchmark::kMicrosecond);
BENCHMARK(PermutationConstruct);
BENCHMARK(RowPlannerRows)
    ->Name("RowPlanner")
    ->ArgNames({"mean_len", "world", "ramp"})
    ->Args({1000, 1, 0})
    ->Args({1000, 1, 1})
    ->Args({1000, 4, 0})
    ->Args({4, 1, 0})
    ->Args({4, 1, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(LaneRows)
    ->Name("Lane")
    ->ArgNames({"mean_len", "lanes", "walked"})
    ->Args({1000, 1, 0})
    ->Args({1000, 64, 0})
    ->Args({1000, 1024, 0})
    ->Args({1000, 16384, 0})
    ->Args({1000, 16384, 1})
    ->Args({4, 1, 0})
    ->Args({4, 64, 0})
    ->Args({4, 64, 1})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
