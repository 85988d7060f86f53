#include "stoker/program/fingerprint.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t by value
#include <xxhash.h>

#include <fmt/format.h>

namespace stoker {

struct Fingerprinter::State {
  XXH3_state_t xxh;
};

Fingerprinter::Fingerprinter() : state_(std::make_unique<State>()) {
  XXH3_128bits_reset(&state_->xxh);
}

Fingerprinter::~Fingerprinter() = default;

void Fingerprinter::Add(uint64_t value) {
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(value >> (8 * i));
  XXH3_128bits_update(&state_->xxh, bytes, sizeof(bytes));
}

void Fingerprinter::Add(std::string_view text) {
  Add(static_cast<uint64_t>(text.size()));
  XXH3_128bits_update(&state_->xxh, text.data(), text.size());
}

std::string Fingerprinter::Hex() const {
  const XXH128_hash_t hash = XXH3_128bits_digest(&state_->xxh);
  return fmt::format("{:016x}{:016x}", hash.high64, hash.low64);
}

}  // namespace stoker
