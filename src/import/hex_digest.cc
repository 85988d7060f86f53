#include "import/hex_digest.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <vector>

#include "base/check.h"

namespace stoker {

namespace {

// Python's name of a digest, and OpenSSL's (nullptr: an xxHash, computed by libxxhash).
struct DigestKind {
  std::string_view name;
  const char* openssl;
};

constexpr std::array<DigestKind, 17> kKinds = {{
    {"xxh32", nullptr},
    {"xxh64", nullptr},
    {"xxh3_64", nullptr},
    {"xxh128", nullptr},
    {"xxh3_128", nullptr},
    {"md5", "MD5"},
    {"sha1", "SHA1"},
    {"sha224", "SHA224"},
    {"sha256", "SHA256"},
    {"sha384", "SHA384"},
    {"sha512", "SHA512"},
    {"sha3_224", "SHA3-224"},
    {"sha3_256", "SHA3-256"},
    {"sha3_384", "SHA3-384"},
    {"sha3_512", "SHA3-512"},
    {"blake2b", "BLAKE2B-512"},
    {"blake2s", "BLAKE2S-256"},
}};

std::string Hex(const unsigned char* bytes, size_t n) {
  std::string hex;
  hex.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) fmt::format_to(std::back_inserter(hex), "{:02x}", bytes[i]);
  return hex;
}

// xxHash digests in their canonical (big-endian) form, as Python's xxhash writes them.
std::string XxHex(std::string_view kind, const void* data, size_t n) {
  if (kind == "xxh32") {
    XXH32_canonical_t c;
    XXH32_canonicalFromHash(&c, XXH32(data, n, 0));
    return Hex(c.digest, sizeof(c.digest));
  }
  if (kind == "xxh64") {
    XXH64_canonical_t c;
    XXH64_canonicalFromHash(&c, XXH64(data, n, 0));
    return Hex(c.digest, sizeof(c.digest));
  }
  if (kind == "xxh3_64") {
    XXH64_canonical_t c;
    XXH64_canonicalFromHash(&c, XXH3_64bits(data, n));
    return Hex(c.digest, sizeof(c.digest));
  }
  XXH128_canonical_t c;  // xxh128 and xxh3_128: two names of one digest
  XXH128_canonicalFromHash(&c, XXH3_128bits(data, n));
  return Hex(c.digest, sizeof(c.digest));
}

std::string OpenSslHex(const char* name, const void* data, size_t n) {
  const EVP_MD* md = EVP_get_digestbyname(name);
  STOKER_ASSERT(md != nullptr, "OpenSSL has no digest {}", name);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  STOKER_ASSERT(EVP_Digest(data, n, digest, &length, md, nullptr) == 1, "OpenSSL's {} failed",
                name);
  return Hex(digest, length);
}

const DigestKind* FindKind(std::string_view kind) {
  const auto* it = std::find_if(kKinds.begin(), kKinds.end(),
                                [kind](const DigestKind& k) { return k.name == kind; });
  return it == kKinds.end() ? nullptr : it;
}

}  // namespace

std::optional<std::string> HexDigest(std::string_view kind, std::span<const std::byte> data) {
  const DigestKind* k = FindKind(kind);
  if (k == nullptr) return std::nullopt;
  return k->openssl == nullptr ? XxHex(kind, data.data(), data.size())
                               : OpenSslHex(k->openssl, data.data(), data.size());
}

bool ComputesHexDigest(std::string_view kind) { return FindKind(kind) != nullptr; }

std::string HexDigestKinds() {
  std::vector<std::string_view> names;
  for (const DigestKind& k : kKinds) names.push_back(k.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace stoker
