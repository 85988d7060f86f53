#include "tokens/content_checksum.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <charconv>
#include <vector>

#include "base/check.h"
#include "tokens/token_type.h"

namespace stoker {

namespace {

constexpr std::string_view kPrefix = "xxh3-64:";

template <typename T>
void Narrow(std::span<const int64_t> ids, std::vector<std::byte>* out) {
  out->resize(ids.size() * sizeof(T));
  T* at = reinterpret_cast<T*>(out->data());
  for (const int64_t id : ids) *at++ = static_cast<T>(id);
}

}  // namespace

struct ContentChecksum::State {
  XXH3_state_t* xxh = XXH3_createState();
  std::vector<std::byte> narrowed;
  ~State() { XXH3_freeState(xxh); }
};

ContentChecksum::ContentChecksum() : state_(std::make_unique<State>()) {
  STOKER_CHECK(state_->xxh != nullptr, InternalError, "XXH3_createState: out of memory");
  XXH3_64bits_reset(state_->xxh);
}

ContentChecksum::~ContentChecksum() = default;

void ContentChecksum::AddOffsets(std::span<const uint64_t> offsets) {
  XXH3_64bits_update(state_->xxh, offsets.data(), offsets.size_bytes());
}

void ContentChecksum::AddTokenBytes(std::span<const std::byte> bytes) {
  XXH3_64bits_update(state_->xxh, bytes.data(), bytes.size());
}

void ContentChecksum::AddTokens(std::span<const int64_t> ids, TokenType type) {
  VisitTokenType(type, [&](auto zero) { Narrow<decltype(zero)>(ids, &state_->narrowed); });
  AddTokenBytes(state_->narrowed);
}

uint64_t ContentChecksum::Value() const { return XXH3_64bits_digest(state_->xxh); }

std::string ChecksumText(uint64_t checksum) { return fmt::format("{}{:016x}", kPrefix, checksum); }

std::optional<uint64_t> ParseChecksum(std::string_view text) {
  if (!text.starts_with(kPrefix) || text.size() != kPrefix.size() + 16) return std::nullopt;
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [at, ec] = std::from_chars(text.data() + kPrefix.size(), end, value, 16);
  if (ec != std::errc() || at != end) return std::nullopt;
  for (const char c : text.substr(kPrefix.size())) {
    if (c >= 'A' && c <= 'F') return std::nullopt;  // written lowercase: one spelling per value
  }
  return value;
}

}  // namespace stoker
