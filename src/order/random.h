// Counter-based random numbers: fully specified, identical on every toolchain, resumable by value.
//
// CounterRng(key, counter): the draw that moves the counter from c to c + 1 yields
// Mix(key + (c + 1) * golden), so CounterRng(key) is the SplitMix64 sequence seeded with `key`.
// Its whole state is (key, counter), so a stream can be saved and resumed by value, and
// independent streams come from independent keys: DeriveKey hashes (seed, purpose, a, b), for
// instance (seed, "synth", dataset, file).
//
// Distributions are our own (std:: distributions differ between standard libraries).
#pragma once

#include <cstdint>
#include <string_view>

namespace stoker {

// SplitMix64's finalizer: a bijection of 64-bit values whose every output bit depends on every
// input bit.
inline uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t DeriveKey(uint64_t seed, std::string_view purpose, uint64_t a = 0, uint64_t b = 0);

class CounterRng {
 public:
  explicit CounterRng(uint64_t key, uint64_t counter = 0) : key_(key), counter_(counter) {}

  uint64_t Next();
  // Uniform in [0, 1) with 53 random bits.
  double NextDouble();
  // Uniform in [0, bound) without modulo bias (Lemire's method with rejection). bound == 0 is
  // an InternalError.
  uint64_t NextBelow(uint64_t bound);
  // Standard normal (Box-Muller; uses two draws).
  double NextNormal();

  uint64_t key() const { return key_; }
  uint64_t counter() const { return counter_; }

 private:
  uint64_t key_;
  uint64_t counter_;
};

}  // namespace stoker
