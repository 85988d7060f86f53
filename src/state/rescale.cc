#include "state/rescale.h"

#include <algorithm>

#include "base/bytes.h"
#include "base/check.h"
#include "order/partition.h"

namespace stoker {

std::vector<RescalePart> SplitState(const RankState& old, uint64_t old_rank,
                                    uint64_t logical_shards, uint64_t new_world) {
  std::vector<RescalePart> parts;
  const uint64_t owned = old.shards.size();
  for (uint64_t j = old.shards.begin; j < old.shards.end; ++j) {
    const uint64_t owner = OwnerOfLogicalShard(logical_shards, new_world, j);
    if (parts.empty() || parts.back().new_rank != owner) {
      parts.push_back({.old_rank = old_rank,
                       .new_rank = owner,
                       .step = old.step,
                       .generation = old.generation,
                       .clock = old.clock,
                       .step_tokens = old.step_tokens});
    }
    parts.back().shards.push_back(j);
    for (uint32_t d = 0; d < old.datasets; ++d) parts.back().cursors.push_back(old.cursor(j, d));
  }
  // Counters go with the shards: part k takes the slice of each counter for its shards.
  uint64_t done = 0;
  for (RescalePart& part : parts) {
    for (uint64_t total : old.lane.started) {
      part.started.push_back(SplitRange(total, owned, done).begin);
      part.started.back() =
          SplitRange(total, owned, done + part.shards.size() - 1).end - part.started.back();
    }
    done += part.shards.size();
  }
  // An open document goes with its logical shard (a walked unit's position).
  const auto part_of = [&](uint64_t shard) -> RescalePart& {
    const uint64_t owner = OwnerOfLogicalShard(logical_shards, new_world, shard);
    return *std::find_if(parts.begin(), parts.end(),
                         [&](const RescalePart& part) { return part.new_rank == owner; });
  };
  for (const OpenUnit& open : old.lane.open) {
    STOKER_CHECK(old.shards.contains(open.unit.dealt.position), DataError,
                 "rank {}'s checkpoint holds a document open in logical shard {}, not its own",
                 old_rank, open.unit.dealt.position);
    part_of(open.unit.dealt.position).open.push_back(open);
  }
  for (const UnfinishedDoc& doc : old.unfinished) part_of(doc.shard).unfinished.push_back(doc);
  return parts;
}

RankState AssembleState(std::vector<RescalePart> parts, uint64_t datasets, uint64_t logical_shards,
                        uint64_t new_world, uint64_t new_rank) {
  std::sort(parts.begin(), parts.end(),
            [](const RescalePart& a, const RescalePart& b) { return a.old_rank < b.old_rank; });
  RankState state = InitialRankState(datasets, logical_shards, new_world, new_rank);
  std::vector<bool> covered(state.shards.size(), false);
  for (const RescalePart& part : parts) {
    STOKER_CHECK(part.step == parts.front().step, DataError,
                 "the checkpoint's rank files disagree on the step: {} (rank {}) and {} (rank {})",
                 part.step, part.old_rank, parts.front().step, parts.front().old_rank);
    STOKER_CHECK(part.new_rank == new_rank, DataError, "a part for rank {} reached rank {}",
                 part.new_rank, new_rank);
    STOKER_CHECK(part.clock == parts.front().clock && part.step_tokens == parts.front().step_tokens,
                 DataError,
                 "the checkpoint's rank files disagree on the mixing clock (ranks {} and {})",
                 part.old_rank, parts.front().old_rank);
    STOKER_CHECK(
        part.started.size() == datasets && part.cursors.size() == part.shards.size() * datasets,
        DataError, "rank {}'s checkpoint holds {} datasets, not {}", part.old_rank,
        part.started.size(), datasets);
    state.generation = std::max(state.generation, part.generation + 1);
    for (uint64_t d = 0; d < datasets; ++d) state.lane.started[d] += part.started[d];
    for (OpenUnit open : part.open) {
      open.unit.dealt.lane = static_cast<uint32_t>(new_rank);
      state.lane.open.push_back(open);
    }
    for (size_t k = 0; k < part.shards.size(); ++k) {
      const uint64_t j = part.shards[k];
      STOKER_CHECK(state.shards.contains(j) && !covered[j - state.shards.begin], DataError,
                   "logical shard {} comes twice or to the wrong rank (from old rank {})", j,
                   part.old_rank);
      covered[j - state.shards.begin] = true;
      for (uint32_t d = 0; d < datasets; ++d) state.cursor(j, d) = part.cursors[k * datasets + d];
    }
    state.unfinished.insert(state.unfinished.end(), part.unfinished.begin(), part.unfinished.end());
  }
  const auto missing = std::find(covered.begin(), covered.end(), false);
  STOKER_CHECK(missing == covered.end(), DataError,
               "no rank file of the checkpoint holds logical shard {}",
               state.shards.begin + (missing - covered.begin()));
  if (!parts.empty()) {
    state.step = parts.front().step;
    state.clock = parts.front().clock;
    state.step_tokens = parts.front().step_tokens;
  }
  return state;
}

std::string EncodeRescalePart(const RescalePart& part) {
  ByteWriter out;
  out.Put(part.old_rank);
  out.Put(part.new_rank);
  out.Put(part.step);
  out.Put(part.generation);
  out.Put(part.clock.step);
  out.PutArray(part.clock.earned);
  out.Put(part.step_tokens);
  out.PutArray(part.started);
  out.Put<uint64_t>(part.shards.size());
  for (uint64_t j : part.shards) out.Put(j);
  out.Put<uint64_t>(part.cursors.size());
  for (const ShardCursor& c : part.cursors) {
    out.Put(c.epoch);
    out.Put(c.position);
    out.Put(c.offset);
  }
  out.Put<uint64_t>(part.unfinished.size());
  for (const UnfinishedDoc& u : part.unfinished) {
    out.Put(u.dataset);
    out.Put(u.shard);
  }
  out.Put<uint64_t>(part.open.size());
  for (const OpenUnit& open : part.open) {
    const Dealt& u = open.unit.dealt;
    out.Put(open.unit.dataset);
    for (uint64_t v : {u.position, u.epoch, u.unit, uint64_t{u.lane}, u.start, u.size}) out.Put(v);
    out.Put(open.unit.due);
    out.Put(open.done);
  }
  return out.Take();
}

RescalePart DecodeRescalePart(const std::string& bytes) {
  ByteReader in(bytes);
  RescalePart part;
  part.old_rank = in.Get<uint64_t>();
  part.new_rank = in.Get<uint64_t>();
  part.step = in.Get<uint64_t>();
  part.generation = in.Get<uint64_t>();
  part.clock.step = in.Get<uint64_t>();
  part.clock.earned = in.GetArray<double>();
  part.step_tokens = in.Get<uint64_t>();
  part.started = in.GetArray<uint64_t>();
  part.shards.resize(in.Get<uint64_t>());
  for (uint64_t& j : part.shards) j = in.Get<uint64_t>();
  part.cursors.resize(in.Get<uint64_t>());
  for (ShardCursor& c : part.cursors) {
    c.epoch = in.Get<uint64_t>();
    c.position = in.Get<uint64_t>();
    c.offset = in.Get<uint64_t>();
  }
  part.unfinished.resize(in.Get<uint64_t>());
  for (UnfinishedDoc& u : part.unfinished) {
    u.dataset = in.Get<uint32_t>();
    u.shard = in.Get<uint64_t>();
  }
  part.open.resize(in.Get<uint64_t>());
  for (OpenUnit& open : part.open) {
    Dealt& u = open.unit.dealt;
    open.unit.dataset = in.Get<uint32_t>();
    u.position = in.Get<uint64_t>();
    u.epoch = in.Get<uint64_t>();
    u.unit = in.Get<uint64_t>();
    u.lane = static_cast<uint32_t>(in.Get<uint64_t>());
    u.start = in.Get<uint64_t>();
    u.size = in.Get<uint64_t>();
    open.unit.due = in.Get<double>();
    open.done = in.Get<uint64_t>();
  }
  return part;
}

}  // namespace stoker
