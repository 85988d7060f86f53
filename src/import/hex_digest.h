// The digests Mosaic Streaming's MDSWriter lists for its shard files in index.json
// ("hashes": {"sha1": "<hex>", "xxh64": "<hex>"}), by the names it gives them there, which are
// those of Python's hashlib and xxhash modules, each written as hexdigest() writes it.
//
// stoker computes every kind MDSWriter can list: xxh32, xxh64, xxh3_64, xxh128 and xxh3_128
// (Debian's libxxhash), md5, sha1, sha224, sha256, sha384, sha512, sha3_224, sha3_256, sha3_384,
// sha3_512, blake2b and blake2s (OpenSSL's libcrypto). Any other name is not computed (HexDigest
// returns nothing; import/mds_shard.cc warns that it is not checked). Thread safe.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace stoker {

// The lowercase hex digest of `data` by `kind`, or nullopt when stoker does not compute `kind`.
std::optional<std::string> HexDigest(std::string_view kind, std::span<const std::byte> data);

// Whether HexDigest computes `kind`.
bool ComputesHexDigest(std::string_view kind);

// The kinds HexDigest computes, comma-separated, for messages.
std::string HexDigestKinds();

}  // namespace stoker
