#include "shard/part_path.h"

#include "base/check.h"

namespace stoker {

namespace {

constexpr uint64_t kMaxParts = 100000;  // RRRRR and KKKKK have five digits

}  // namespace

void CheckPartRank(int rank, std::string_view command) {
  STOKER_CHECK(rank >= 0 && static_cast<uint64_t>(rank) < kMaxParts, ConfigError,
               "{} runs on at most {} ranks (shards are named part-RRRRR-KKKKK.h5 with five "
               "digits, so that path order is input order); this is rank {}",
               command, kMaxParts, rank);
}

std::string PartPath(const std::string& folder, int rank, uint64_t index, uint64_t shard_tokens) {
  STOKER_CHECK(index < kMaxParts, ConfigError,
               "rank {} would write more than {} shards to {} (part-RRRRR-KKKKK.h5 names keep "
               "input order only up to KKKKK = 99999); raise --shard-tokens (now {}) or run on "
               "more ranks",
               rank, kMaxParts, folder, shard_tokens);
  return fmt::format("{}/part-{:05}-{:05}.h5", folder, rank, index);
}

}  // namespace stoker
