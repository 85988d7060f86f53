// Permutation: a keyed pseudo-random permutation of [0, n), evaluated one index at a time in O(1)
// memory and expected O(1) time, with no build step.
//
// A Feistel network over the k-bit domain [0, 2^k), 2^k the smallest power of two >= n (at least
// 4), permutes k-bit values; cycle-walking (apply it again while the result is >= n) restricts
// it to [0, n). Since 2^k < 2n, fewer than two steps are needed on average. The rounds split the
// value into two halves of k/2 and k - k/2 bits (an unbalanced Feistel network when k is odd),
// each round keyed by its own derivation of the key, so the permutation depends on the whole key.
//
// Pure value type; thread safe for concurrent At() calls.
#pragma once

#include <cstdint>

namespace stoker {

class Permutation {
 public:
  static constexpr int kRounds = 6;

  Permutation(uint64_t n, uint64_t key);

  // The element at position `i` of the permuted order, i < size().
  uint64_t At(uint64_t i) const;
  // The position of `x` in the permuted order: Inverse(At(i)) == i.
  uint64_t Inverse(uint64_t x) const;

  uint64_t size() const { return n_; }

 private:
  uint64_t Forward(uint64_t x) const;
  uint64_t Backward(uint64_t x) const;
  uint64_t Round(int round, uint64_t half) const;

  uint64_t n_;
  int bits_;        // k
  int low_bits_;    // k / 2
  uint64_t round_keys_[kRounds];
};

}  // namespace stoker
