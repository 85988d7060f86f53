// Simulated worlds for the pure core: a made-up corpus (document lengths only), planner
// configurations for any rank of any world, and a counter of every framed token delivered.
// Header-only; no I/O, no MPI.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "order/random.h"
#include "packing/row_planner.h"

namespace stoker::testing {

// Per dataset, document lengths (about one in ten empty).
struct FakeCorpus {
  std::vector<std::string> names;
  std::vector<std::vector<uint64_t>> lengths;

  static FakeCorpus Make(const std::vector<uint64_t>& docs_per_dataset, uint64_t seed,
                         double mean = 50) {
    FakeCorpus c;
    CounterRng rng(seed);
    for (size_t d = 0; d < docs_per_dataset.size(); ++d) {
      c.names.push_back("ds" + std::to_string(d));
      auto& lengths = c.lengths.emplace_back();
      for (uint64_t i = 0; i < docs_per_dataset[d]; ++i) {
        lengths.push_back(rng.NextBelow(10) == 0 ? 0 : 1 + rng.NextBelow(2 * mean));
      }
    }
    return c;
  }

  DocLocator Locator() const {
    return [this](uint32_t d, uint64_t doc) { return DocSpan{d, doc, lengths[d][doc]}; };
  }
};

inline PlannerConfig ConfigFor(const FakeCorpus& corpus, const std::vector<double>& weights,
                               uint64_t shards, uint64_t world, uint64_t rank, uint64_t row = 97) {
  PlannerConfig config{
      .seed = 7, .logical_shards = shards, .world = world, .rank = rank, .row_tokens = row};
  for (size_t d = 0; d < corpus.names.size(); ++d) {
    uint64_t tokens = 0;
    for (uint64_t n : corpus.lengths[d]) tokens += n;
    config.datasets.push_back({corpus.names[d], corpus.lengths[d].size(), tokens});
  }
  config.schedule = MixSchedule::Constant(MixSchedule::Normalized(weights));
  return config;
}

// True when every logical shard of the state that holds documents of a dataset of positive
// weight is past `epoch`.
inline bool AllPastEpoch(const RankState& state, const PlannerConfig& config, uint64_t epoch) {
  for (uint32_t d = 0; d < state.datasets; ++d) {  // dealt: the lane's next unit is past it
    const auto& sizes = config.datasets[d].sizes;
    if (sizes && config.schedule.EverPositive(d) &&
        state.lane.dealers[d].position / sizes->size() <= epoch) {
      return false;
    }
  }
  for (uint64_t j = state.shards.begin; j < state.shards.end; ++j) {
    for (uint32_t d = 0; d < state.datasets; ++d) {
      if (config.datasets[d].sizes) continue;
      const DatasetOrder order(config.seed, config.datasets[d].name, config.datasets[d].docs,
                               config.logical_shards);
      if (order.Slice(j).empty() || !config.schedule.EverPositive(d)) continue;
      if (state.cursor(j, d).epoch <= epoch) return false;
    }
  }
  // A document's cursor passes it when it starts: one still open is not past.
  for (const OpenUnit& open : state.lane.open) {
    if (open.unit.dealt.epoch <= epoch) return false;
  }
  return true;
}

// How many times each framed token of epoch 0 was delivered, per dataset and document.
class EpochZeroCounter {
 public:
  explicit EpochZeroCounter(const FakeCorpus& corpus) {
    for (const auto& lengths : corpus.lengths) {
      auto& docs = seen_.emplace_back();
      for (uint64_t n : lengths) docs.emplace_back(n == 0 ? 0 : n + 1, 0);
    }
  }
  void Add(const std::vector<Segment>& row) {
    for (const Segment& s : row) {
      if (s.epoch != 0) continue;
      for (uint64_t t = s.first; t < s.first + s.count; ++t) ++seen_[s.dataset][s.doc][t];
    }
  }
  // Every framed token of every dataset of positive weight, delivered exactly once.
  void ExpectExactlyOnce(const std::vector<double>& weights) const {
    for (size_t d = 0; d < seen_.size(); ++d) {
      if (weights[d] == 0) continue;
      for (size_t doc = 0; doc < seen_[d].size(); ++doc) {
        for (size_t t = 0; t < seen_[d][doc].size(); ++t) {
          ASSERT_EQ(seen_[d][doc][t], 1) << "dataset " << d << " doc " << doc << " token " << t;
        }
      }
    }
  }

 private:
  std::vector<std::vector<std::vector<int>>> seen_;
};

}  // namespace stoker::testing
