#include "order/random.h"

#include <xxhash.h>

#include <cmath>
#include <cstring>
#include <numbers>
#include <string>

#include "base/check.h"

namespace stoker {

namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

}  // namespace

// Hashes purpose, then seed, a and b as 8 little-endian bytes each. The bytes are laid out on the
// stack when they fit (the planner derives keys per document; a std::string would allocate).
uint64_t DeriveKey(uint64_t seed, std::string_view purpose, uint64_t a, uint64_t b) {
  char stack[128];
  std::string heap;
  const size_t size = purpose.size() + 3 * 8;
  char* bytes = stack;
  if (size > sizeof(stack)) {
    heap.resize(size);
    bytes = heap.data();
  }
  if (!purpose.empty()) std::memcpy(bytes, purpose.data(), purpose.size());
  char* at = bytes + purpose.size();
  for (uint64_t v : {seed, a, b}) {
    for (int i = 0; i < 8; ++i) *at++ = static_cast<char>((v >> (8 * i)) & 0xff);
  }
  return XXH3_64bits(bytes, size);
}

uint64_t CounterRng::Next() { return Mix64(key_ + (++counter_) * kGolden); }

double CounterRng::NextDouble() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

uint64_t CounterRng::NextBelow(uint64_t bound) {
  STOKER_ASSERT(bound > 0, "NextBelow(0): the range [0, 0) is empty");
  unsigned __int128 product = static_cast<unsigned __int128>(Next()) * bound;
  auto low = static_cast<uint64_t>(product);
  if (low < bound) {
    const uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      product = static_cast<unsigned __int128>(Next()) * bound;
      low = static_cast<uint64_t>(product);
    }
  }
  return static_cast<uint64_t>(product >> 64);
}

double CounterRng::NextNormal() {
  const double u1 = 1.0 - NextDouble();  // (0, 1]: log stays finite
  const double u2 = NextDouble();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace stoker
