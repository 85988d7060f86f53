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
      parts.push_back({.old_rank = old_rank, .new_rank = owner, .step = old.step,
                       .generation = old.generation});
    }
    parts.back().shards.push_back(j);
    for (uint32_t d = 0; d < old.datasets; ++d) parts.back().cursors.push_back(old.cursor(j, d));
  }
  // Counters go with the shards: part k takes the slice of each counter for its shards.
  uint64_t done = 0;
  for (RescalePart& part : parts) {
    for (uint64_t total : old.delivered) {
      part.delivered.push_back(SplitRange(total, owned, done).begin);
      part.delivered.back() =
          SplitRange(total, owned, done + part.shards.size() - 1).end - part.delivered.back();
    }
    const double fraction = static_cast<double>(part.shards.size()) / static_cast<double>(owned);
    for (double deficit : old.deficit) part.deficit.push_back(deficit * fraction);
    done += part.shards.size();
  }
  for (const UnfinishedDoc& doc : old.unfinished) {
    const uint64_t owner = OwnerOfLogicalShard(logical_shards, new_world, doc.shard);
    for (RescalePart& part : parts) {
      if (part.new_rank == owner) part.unfinished.push_back(doc);
    }
  }
  return parts;
}

RankState AssembleState(std::vector<RescalePart> parts, uint64_t datasets,
                        uint64_t logical_shards, uint64_t new_world, uint64_t new_rank) {
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
    STOKER_CHECK(part.delivered.size() == datasets && part.deficit.size() == datasets &&
                     part.cursors.size() == part.shards.size() * datasets,
                 DataError, "rank {}'s checkpoint holds {} datasets, not {}", part.old_rank,
                 part.delivered.size(), datasets);
    state.generation = std::max(state.generation, part.generation + 1);
    for (uint64_t d = 0; d < datasets; ++d) {
      state.delivered[d] += part.delivered[d];
      state.deficit[d] += part.deficit[d];
    }
    for (size_t k = 0; k < part.shards.size(); ++k) {
      const uint64_t j = part.shards[k];
      STOKER_CHECK(state.shards.contains(j) && !covered[j - state.shards.begin], DataError,
                   "logical shard {} comes twice or to the wrong rank (from old rank {})", j,
                   part.old_rank);
      covered[j - state.shards.begin] = true;
      for (uint32_t d = 0; d < datasets; ++d) state.cursor(j, d) = part.cursors[k * datasets + d];
    }
    state.unfinished.insert(state.unfinished.end(), part.unfinished.begin(),
                            part.unfinished.end());
  }
  const auto missing = std::find(covered.begin(), covered.end(), false);
  STOKER_CHECK(missing == covered.end(), DataError,
               "no rank file of the checkpoint holds logical shard {}",
               state.shards.begin + (missing - covered.begin()));
  state.step = parts.empty() ? 0 : parts.front().step;
  return state;
}

std::string EncodeRescalePart(const RescalePart& part) {
  ByteWriter out;
  out.Put(part.old_rank);
  out.Put(part.new_rank);
  out.Put(part.step);
  out.Put(part.generation);
  out.Put<uint64_t>(part.delivered.size());
  for (uint64_t v : part.delivered) out.Put(v);
  out.Put<uint64_t>(part.deficit.size());
  for (double v : part.deficit) out.Put(v);
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
  return out.Take();
}

RescalePart DecodeRescalePart(const std::string& bytes) {
  ByteReader in(bytes);
  RescalePart part;
  part.old_rank = in.Get<uint64_t>();
  part.new_rank = in.Get<uint64_t>();
  part.step = in.Get<uint64_t>();
  part.generation = in.Get<uint64_t>();
  part.delivered.resize(in.Get<uint64_t>());
  for (uint64_t& v : part.delivered) v = in.Get<uint64_t>();
  part.deficit.resize(in.Get<uint64_t>());
  for (double& v : part.deficit) v = in.Get<double>();
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
  return part;
}

}  // namespace stoker
