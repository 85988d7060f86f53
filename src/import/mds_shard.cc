#include "import/mds_shard.h"

#include <zstd.h>

#include <algorithm>
#include <cctype>
#include <span>

#include "base/check.h"
#include "import/hex_digest.h"
#include "import/import_input.h"

namespace stoker {

namespace {

// Every hash of `hashes` that stoker computes, checked against `bytes`.
void CheckHashes(const MdsHashes& hashes, std::span<const std::byte> bytes, const std::string& what,
                 const MdsShard& shard) {
  for (const auto& [kind, listed] : hashes) {
    const std::optional<std::string> found = HexDigest(kind, bytes);
    if (!found) continue;
    std::string expected = listed;
    std::transform(expected.begin(), expected.end(), expected.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    STOKER_CHECK(*found == expected, DataError,
                 "{}: the {} hash of {} is {}, but {} lists {}: the file is damaged or not the "
                 "one the index was written with",
                 shard.path, kind, what, *found, shard.index, listed);
  }
}

// The bytes the zstd frames of `stored` say they hold, summed; DataError where a frame does not
// say (stoker takes memory for a shard only as its frames declare it).
uint64_t DeclaredSize(std::span<const std::byte> stored, const MdsShard& shard) {
  uint64_t total = 0;
  for (size_t at = 0; at < stored.size();) {
    const void* frame = stored.data() + at;
    const size_t left = stored.size() - at;
    const unsigned long long size = ZSTD_getFrameContentSize(frame, left);
    STOKER_CHECK(size != ZSTD_CONTENTSIZE_ERROR, DataError,
                 "{}: byte {} does not start a zstd frame", shard.path, at);
    STOKER_CHECK(size != ZSTD_CONTENTSIZE_UNKNOWN, DataError,
                 "{}: its zstd frame at byte {} does not say how many bytes it holds; stoker "
                 "decompresses frames that do (MDSWriter writes such frames)",
                 shard.path, at);
    const size_t bytes = ZSTD_findFrameCompressedSize(frame, left);
    STOKER_CHECK(!ZSTD_isError(bytes), DataError, "{}: the zstd frame at byte {} is cut short: {}",
                 shard.path, at, ZSTD_getErrorName(bytes));
    STOKER_CHECK(!__builtin_add_overflow(total, size, &total), DataError,
                 "{}: its zstd frames say they hold more than 2^64 bytes", shard.path);
    at += bytes;
  }
  return total;
}

}  // namespace

std::vector<std::byte> LoadShard(const MdsShard& shard) {
  const InputFile file(shard.path);
  STOKER_CHECK(file.size() == shard.stored_bytes, DataError,
               "{} is {} bytes, but {} says {}: truncated or rewritten", shard.path, file.size(),
               shard.index, shard.stored_bytes);
  std::vector<std::byte> stored(file.size());
  file.Read(0, stored.size(), stored.data(), "the shard");
  file.Release();  // still the file it was: one rewritten while it was read is refused
  CheckHashes(shard.stored_hashes, stored, "the file", shard);
  if (!shard.zstd) return stored;
  const uint64_t declared = DeclaredSize(stored, shard);
  STOKER_CHECK(declared == shard.raw_bytes, DataError,
               "{}: its zstd frames say they hold {} bytes, but {} says raw_data is {} bytes: "
               "refused before decompressing",
               shard.path, declared, shard.index, shard.raw_bytes);
  std::vector<std::byte> raw(shard.raw_bytes);
  const size_t n = ZSTD_decompress(raw.data(), raw.size(), stored.data(), stored.size());
  STOKER_CHECK(!ZSTD_isError(n), DataError, "{}: zstd cannot decompress it: {}", shard.path,
               ZSTD_getErrorName(n));
  STOKER_ASSERT(n == shard.raw_bytes, "{}: {} bytes decompressed where its frames declared {}",
                shard.path, n, shard.raw_bytes);
  CheckHashes(shard.raw_hashes, raw, "its decompressed bytes", shard);
  return raw;
}

std::set<std::string> UncheckedHashKinds(const MdsShard& shard) {
  std::set<std::string> kinds;
  for (const MdsHashes* hashes : {&shard.stored_hashes, &shard.raw_hashes}) {
    for (const auto& [kind, digest] : *hashes) {
      if (!ComputesHexDigest(kind)) kinds.insert(kind);
    }
  }
  return kinds;
}

}  // namespace stoker
