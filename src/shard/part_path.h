// The names `stoker pack` and `stoker import` give the shards they write:
// FOLDER/part-RRRRR-KKKKK.h5, R the rank that wrote it and K its shard on that rank, five digits
// each, so that path order (the dataset's order, docs/format.md) is input order. Five digits
// limit a run to 100,000 ranks and 100,000 shards a rank. Plain functions, thread safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace stoker {

// ConfigError when `rank` cannot be named in five digits ("COMMAND runs on at most 100000
// ranks ...; this is rank R").
void CheckPartRank(int rank, std::string_view command);

// FOLDER/part-RRRRR-KKKKK.h5 for shard `index` of `rank`. ConfigError when `index` needs a sixth
// digit, naming FOLDER and how to write fewer shards (`shard_tokens`, the tokens a shard holds).
std::string PartPath(const std::string& folder, int rank, uint64_t index, uint64_t shard_tokens);

}  // namespace stoker
