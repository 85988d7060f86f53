#include "state/rescale.h"

#include <algorithm>
#include <map>

#include "base/bytes.h"
#include "base/check.h"
#include "order/partition.h"
#include "state/lane_codec.h"

namespace stoker {

namespace {

// The old lanes of dataset `d`, if it is dealt: its dealing's lanes (or, still to be dealt again,
// the positions' count); 0 for a walked one.
uint64_t DealtLanes(const RankState& old, uint32_t d) {
  if (d < old.redeal.size() && !old.redeal[d].empty()) return old.redeal[d].size();
  return old.lane.dealers[d].loads.size();
}

// The dealt datasets' part of the split: a part for every new rank, each with the old lane's
// position in every dealt dataset and, in the part for new rank k from old rank k mod W, a state
// to deal again from; the open units of dealt datasets to the new ranks in turn. A state still to
// be dealt again holds every lane of the dealing before it (the same on every old rank): only the
// old rank that owns a new rank's first logical shard sends them and a state to deal from, so
// that a new rank gets them once, not once per old rank (W x W' x the lanes before in all).
void SplitDealt(const RankState& old, uint64_t old_rank, uint64_t logical_shards,
                uint64_t new_world, std::vector<RescalePart>* parts) {
  std::vector<uint32_t> dealt;
  for (uint32_t d = 0; d < old.datasets; ++d) {
    if (DealtLanes(old, d) > 0) dealt.push_back(d);
  }
  if (dealt.empty()) return;
  std::vector<RescalePart> all(new_world);
  for (uint64_t k = 0; k < new_world; ++k) {
    all[k] = {.old_rank = old_rank,
              .new_rank = k,
              .step = old.step,
              .generation = old.generation,
              .clock = old.clock,
              .step_tokens = old.step_tokens,
              .started = std::vector<uint64_t>(old.datasets, 0)};
  }
  for (RescalePart& part : *parts) all[part.new_rank] = std::move(part);
  for (RescalePart& part : all) {
    part.positions.resize(old.datasets);
    part.from.resize(old.datasets);
    const bool first_owner =
        old.shards.contains(OwnedLogicalShards(logical_shards, new_world, part.new_rank).begin);
    for (uint32_t d : dealt) {
      const uint64_t lanes = DealtLanes(old, d);
      if (d < old.redeal.size() && !old.redeal[d].empty()) {  // still to be dealt again
        if (!first_owner) continue;
        for (uint64_t l = 0; l < lanes; ++l) part.positions[d].emplace_back(l, old.redeal[d][l]);
        part.from[d] = old.lane.dealers[d];
        continue;
      }
      part.positions[d].emplace_back(old_rank, old.lane.dealers[d].position);
      if (part.new_rank % lanes == old_rank) {
        const auto& earlier = old.lane.earlier[d];
        part.from[d] = earlier.empty() ? old.lane.dealers[d] : earlier.front();
      }
    }
  }
  uint64_t turn = old_rank;
  for (const OpenUnit& open : old.lane.open) {
    if (DealtLanes(old, open.unit.dataset) > 0) all[turn++ % new_world].open.push_back(open);
  }
  // Parts that carry nothing (only a state still to be dealt again is dealt, and this old rank
  // neither owns the new rank's first shard nor has shards or open units for it) are not sent.
  std::erase_if(all, [](const RescalePart& part) {
    return part.shards.empty() && part.open.empty() && part.unfinished.empty() &&
           std::all_of(part.positions.begin(), part.positions.end(),
                       [](const auto& pairs) { return pairs.empty(); });
  });
  *parts = std::move(all);
}

// Per dealt dataset: every old lane's position and a state at or before them to deal again from
// (RankState::redeal).
void AssembleDealt(const std::vector<RescalePart>& parts, uint64_t datasets, uint64_t new_rank,
                   RankState* state) {
  for (uint64_t d = 0; d < datasets; ++d) {
    std::map<uint64_t, uint64_t> positions;  // old lane -> position
    const DealerState* from = nullptr;
    for (const RescalePart& part : parts) {
      if (d >= part.positions.size()) continue;
      for (const auto& [lane, position] : part.positions[d]) {
        const auto [at, fresh] = positions.emplace(lane, position);
        STOKER_CHECK(fresh || at->second == position, DataError,
                     "the checkpoint's rank files disagree on old rank {}'s position in dataset {}",
                     lane, d);
      }
      if (d < part.from.size() && part.from[d] &&
          (from == nullptr || part.from[d]->position < from->position)) {
        from = &*part.from[d];
      }
    }
    if (positions.empty()) continue;
    STOKER_CHECK(from != nullptr, DataError,
                 "no rank file gave rank {} a dealer state of dataset {} to deal it again from",
                 new_rank, d);
    const uint64_t lanes = from->loads.size();
    STOKER_CHECK(positions.size() == lanes && positions.rbegin()->first == lanes - 1, DataError,
                 "rank {} got the positions in dataset {} of {} old ranks of {}", new_rank, d,
                 positions.size(), lanes);
    std::vector<uint64_t> by_lane;
    for (const auto& [lane, position] : positions) by_lane.push_back(position);
    const uint64_t least = *std::min_element(by_lane.begin(), by_lane.end());
    STOKER_CHECK(from->position <= least, DataError,
                 "dataset {}: the oldest dealer state the rank files kept (position {}) lies past "
                 "the least old rank's position {}: the ranks were more than two epochs apart",
                 d, from->position, least);
    state->lane.dealers[d] = *from;
    state->lane.earlier[d].clear();
    state->redeal.resize(datasets);
    state->redeal[d] = std::move(by_lane);
  }
}

}  // namespace

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
    if (DealtLanes(old, open.unit.dataset) > 0) continue;  // SplitDealt's
    STOKER_CHECK(old.shards.contains(open.unit.dealt.position), DataError,
                 "rank {}'s checkpoint holds a document open in logical shard {}, not its own",
                 old_rank, open.unit.dealt.position);
    part_of(open.unit.dealt.position).open.push_back(open);
  }
  for (const UnfinishedDoc& doc : old.unfinished) part_of(doc.shard).unfinished.push_back(doc);
  SplitDealt(old, old_rank, logical_shards, new_world, &parts);
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
  AssembleDealt(parts, datasets, new_rank, &state);
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
  out.Put<uint64_t>(part.positions.size());
  for (const auto& pairs : part.positions) {
    out.Put<uint64_t>(pairs.size());
    for (const auto& [lane, position] : pairs) {
      out.Put(lane);
      out.Put(position);
    }
  }
  out.Put<uint64_t>(part.from.size());
  for (const std::optional<DealerState>& from : part.from) {
    out.Put<uint8_t>(from.has_value());
    if (!from) continue;
    out.Put(from->position);
    out.Put(from->start);
    out.PutArray(from->loads);
    out.PutArray(from->skip);
  }
  FieldWriter open;  // as a rank file holds them (state/lane_codec.h)
  PutOpenUnits(part.open, &open);
  out.PutString(open.bytes());
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
  part.positions.resize(in.Get<uint64_t>());
  for (auto& pairs : part.positions) {
    pairs.resize(in.Get<uint64_t>());
    for (auto& [lane, position] : pairs) {
      lane = in.Get<uint64_t>();
      position = in.Get<uint64_t>();
    }
  }
  part.from.resize(in.Get<uint64_t>());
  for (std::optional<DealerState>& from : part.from) {
    if (in.Get<uint8_t>() == 0) continue;
    from.emplace();
    from->position = in.Get<uint64_t>();
    from->start = in.Get<uint64_t>();
    from->loads = in.GetArray<uint64_t>();
    from->skip = in.GetArray<uint64_t>();
  }
  const std::string open = in.GetString();
  FieldReader fields(open, "a rescale part", "rescale part");
  part.open = GetOpenUnits(&fields, part.started.size(), UINT32_MAX);
  return part;
}

}  // namespace stoker
