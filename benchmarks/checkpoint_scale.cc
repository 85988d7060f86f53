#include "checkpoint_scale.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/bytes.h"
#include "order/partition.h"
#include "order/random.h"
#include "packing/row_planner.h"
#include "state/checkpoint_codec.h"
#include "state/rescale.h"

namespace stoker {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Spread {
  double median = 0, max = 0;
};

Spread Of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? Spread{} : Spread{v[v.size() / 2], v.back()};
}

// The largest resident size of this process so far, in MiB.
double PeakMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024;
}

// Rank i of `sample` spread over `world`: one in each of `sample` equal runs, at a varying place.
uint64_t SampledRank(uint64_t world, uint64_t sample, uint64_t i) {
  const IndexRange run = SplitRange(world, sample, i);
  return run.begin + (i * 7919) % run.size();
}

// A made-up document length: 1 to 1,999 tokens, 1,000 on average.
uint64_t DocLength(uint32_t dataset, uint64_t doc) {
  return 1 + Mix64(doc * 4 + dataset + 0x5eed) % 1999;
}

PlannerConfig ScaleConfig(const ScaleOptions& o, uint64_t rank,
                          const std::shared_ptr<const std::vector<uint64_t>>& sizes) {
  PlannerConfig c{.seed = 1,
                  .logical_shards = o.shards,
                  .world = o.world,
                  .rank = rank,
                  .row_tokens = 4097,
                  .rows = 8};
  const uint64_t web = 90'000'000'000, code = 10'000'000'000;
  c.datasets = {{.name = "web", .docs = web, .tokens = web * 1000},
                {.name = "code", .docs = code, .tokens = code * 1000}};
  std::vector<double> weights = {0.7, 0.2};
  if (sizes) {
    c.datasets.push_back({.name = "books", .docs = sizes->size(), .sizes = sizes});
    for (uint64_t s : *sizes) c.datasets.back().tokens += s - 1;
    weights.push_back(0.1);
  }
  c.schedule = MixSchedule::Constant(MixSchedule::Normalized(weights));
  return c;
}

RankCheckpoint ScaleCheckpoint(const PlannerConfig& c, const RankState& state) {
  RankCheckpoint ck{.identity = {.corpus_fingerprint = "0123456789abcdef",
                                 .seed = c.seed,
                                 .logical_shards = c.logical_shards,
                                 .seq_len = c.row_tokens - 1},
                    .weights = c.schedule.WeightsAt(state.step),
                    .schedule = c.schedule,
                    .world = c.world,
                    .rank = c.rank,
                    .run = "0123456789abcdef0123456789abcdef",
                    .state = state};
  for (const PlannerDataset& d : c.datasets) ck.identity.datasets.push_back(d.name);
  return ck;
}

// A plausible state of old rank `r`: cursors at a position and one past it, a document open;
// with `dealt`, dataset 0 dealt: a dealer state and an earlier one, each of `from` lanes' loads.
RankState SimulatedState(const ScaleOptions& o, uint64_t r) {
  RankState s = InitialRankState(o.datasets, o.shards, o.from, r);
  CounterRng rng(DeriveKey(1, "bench", r));
  for (ShardCursor& c : s.cursors) c = {0, 40 + rng.NextBelow(2), 0};
  for (uint64_t& d : s.lane.started) d = 1000000 + rng.NextBelow(1000);
  if (!s.shards.empty()) {
    s.lane.open.push_back({.unit = {.dataset = 0,
                                    .dealt = {.position = s.shards.begin, .unit = 40, .size = 900},
                                    .due = 1000.5},
                           .done = 7});
  }
  if (o.dealt) {
    DealerState now = FirstDealerState(static_cast<uint32_t>(o.from));
    for (uint64_t& load : now.loads) load = 1'000'000'000 + rng.NextBelow(2000);
    DealerState earlier = now;
    for (uint64_t& load : earlier.loads) load -= 500'000'000;
    now.position = 5'000'000 + r;
    earlier.position = 2'500'000;
    s.lane.dealers[0] = std::move(now);
    s.lane.earlier.resize(o.datasets);
    s.lane.earlier[0] = {std::move(earlier)};
  }
  s.step = 1000;
  return s;
}

}  // namespace

void PlanAtScale(const ScaleOptions& o) {
  std::shared_ptr<const std::vector<uint64_t>> sizes;
  if (o.dealt_docs > 0) {
    auto framed = std::make_shared<std::vector<uint64_t>>(o.dealt_docs);
    for (uint64_t d = 0; d < o.dealt_docs; ++d) (*framed)[d] = DocLength(2, d) + 1;
    sizes = framed;
  }
  const DocLocator locate = [](uint32_t dataset, uint64_t doc) {
    return DocSpan{.file = dataset, .begin = doc * 1000, .length = DocLength(dataset, doc)};
  };
  std::vector<double> construct, first, batch, bytes, delta;
  for (uint64_t i = 0; i < o.sample; ++i) {
    const uint64_t rank = SampledRank(o.world, o.sample, i);
    const PlannerConfig config = ScaleConfig(o, rank, sizes);
    RankState state = InitialRankState(config.datasets.size(), o.shards, o.world, rank);
    if (sizes) StartDealing({false, false, true}, o.world, &state);
    auto start = Clock::now();
    RowPlanner planner(config, std::move(state), locate);
    construct.push_back(Ms(start));
    std::vector<Segment> row;
    for (uint64_t s = 0; s < o.steps; ++s) {
      start = Clock::now();
      for (uint64_t k = 0; k < config.rows; ++k) planner.NextRow(&row);
      planner.EndBatch();
      delta.push_back(static_cast<double>(planner.TakeDelta().cursors.size()));
      (s == 0 ? first : batch).push_back(Ms(start));
    }
    bytes.push_back(
        static_cast<double>(EncodeCheckpoint(ScaleCheckpoint(config, planner.state())).size()));
  }
  const Spread c = Of(construct), f = Of(first), b = Of(batch), n = Of(bytes), d = Of(delta);
  fmt::print(
      "plan world={} shards={} shards_per_rank={} dealt_docs={} ranks_sampled={} steps={} "
      "rows=8x4097 construct_ms median={:.3f} max={:.3f} first_batch_ms median={:.3f} "
      "max={:.3f} batch_ms median={:.3f} max={:.3f} cursors_changed_per_batch median={:.0f} "
      "max={:.0f}\n",
      o.world, o.shards, o.shards / o.world, o.dealt_docs, o.sample, o.steps, c.median, c.max,
      f.median, f.max, b.median, b.max, d.median, d.max);
  fmt::print(
      "state world={} shards={} dealt_docs={} rank_file_bytes median={:.0f} max={:.0f} "
      "peak_rss_mib={:.0f}\n",
      o.world, o.shards, o.dealt_docs, n.median, n.max, PeakMiB());
}

void RescaleAtScale(const ScaleOptions& o) {
  std::vector<bool> assembled(o.to, !o.dealt);
  for (uint64_t i = 0; o.dealt && i < std::min(o.sample, o.to); ++i) {
    assembled[SampledRank(o.to, std::min(o.sample, o.to), i)] = true;
  }
  std::vector<std::string> inbox(o.to);  // per new rank: its parts, framed as the restore sends
  std::vector<double> split_ms, sent, parts_sent;
  std::vector<ShardCursor> copy;  // the floor: merely copying each old rank's cursors
  double copy_ms = 0;
  for (uint64_t r = 0; r < o.from; ++r) {
    const RankState old = SimulatedState(o, r);
    auto start = Clock::now();
    copy.assign(old.cursors.begin(), old.cursors.end());
    copy_ms += Ms(start);
    start = Clock::now();
    uint64_t bytes = 0, parts = 0;
    for (const RescalePart& part : SplitState(old, r, o.shards, o.to)) {
      const std::string encoded = EncodeRescalePart(part);
      bytes += encoded.size() + 8;
      ++parts;
      if (!assembled[part.new_rank]) continue;
      ByteWriter framed;
      framed.PutString(encoded);
      inbox[part.new_rank] += framed.bytes();
    }
    split_ms.push_back(Ms(start));
    sent.push_back(static_cast<double>(bytes));
    parts_sent.push_back(static_cast<double>(parts));
  }
  std::vector<double> assemble_ms, received;
  uint64_t cursors = 0;
  for (uint64_t n = 0; n < o.to; ++n) {
    if (!assembled[n]) continue;
    received.push_back(static_cast<double>(inbox[n].size()));
    const auto start = Clock::now();
    std::vector<RescalePart> parts;
    ByteReader in(inbox[n]);
    while (!in.done()) parts.push_back(DecodeRescalePart(in.GetString()));
    cursors += AssembleState(std::move(parts), o.datasets, o.shards, o.to, n).cursors.size();
    assemble_ms.push_back(Ms(start));
    std::string().swap(inbox[n]);
  }
  const Spread s = Of(split_ms), a = Of(assemble_ms), out = Of(sent), in = Of(received);
  double split_total = 0, assemble_total = 0;
  for (double t : split_ms) split_total += t;
  for (double t : assemble_ms) assemble_total += t;
  fmt::print(
      "rescale from={} to={} shards={} datasets={} dealt={} new_ranks_assembled={} cursors={} "
      "split_encode_s={:.3f} decode_assemble_s={:.3f} total_s={:.3f} copy_floor_s={:.4f} "
      "peak_rss_mib={:.0f}\n",
      o.from, o.to, o.shards, o.datasets, o.dealt ? 1 : 0, received.size(), cursors,
      split_total / 1e3, assemble_total / 1e3, (split_total + assemble_total) / 1e3, copy_ms / 1e3,
      PeakMiB());
  fmt::print(
      "rescale per_rank old_split_encode_ms median={:.3f} max={:.3f} new_decode_assemble_ms "
      "median={:.3f} max={:.3f} old_sends_bytes median={:.0f} max={:.0f} old_sends_parts "
      "max={:.0f} new_receives_bytes median={:.0f} max={:.0f}\n",
      s.median, s.max, a.median, a.max, out.median, out.max, Of(parts_sent).max, in.median, in.max);
}

}  // namespace stoker
