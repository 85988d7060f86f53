#include "order/permutation.h"

#include <bit>

#include "base/check.h"
#include "order/random.h"

namespace stoker {

namespace {

uint64_t Mask(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

}  // namespace

Permutation::Permutation(uint64_t n, uint64_t key) : n_(n) {
  STOKER_ASSERT(n <= (uint64_t{1} << 62), "permutation of {} elements", n);
  bits_ = std::max(2, static_cast<int>(std::bit_width(n > 0 ? n - 1 : 0)));
  low_bits_ = bits_ / 2;
  for (int r = 0; r < kRounds; ++r) round_keys_[r] = Mix64(key ^ Mix64(0x5354'4F4B'4552ull + r));
}

uint64_t Permutation::Round(int round, uint64_t half) const {
  return Mix64(half ^ round_keys_[round]);
}

// One round maps (top, bottom) to (bottom, top ^ F(bottom)), written bottom-first: the new value
// has `bottom` in its high bits and the masked top in its low bits. The widths of the two parts
// swap each round, so even rounds split at low_bits_ and odd rounds at bits_ - low_bits_.
uint64_t Permutation::Forward(uint64_t x) const {
  for (int r = 0; r < kRounds; ++r) {
    const int low = (r % 2 == 0) ? low_bits_ : bits_ - low_bits_;
    const int high = bits_ - low;
    const uint64_t top = x >> low;
    const uint64_t bottom = x & Mask(low);
    x = (bottom << high) | ((top ^ Round(r, bottom)) & Mask(high));
  }
  return x;
}

uint64_t Permutation::Backward(uint64_t x) const {
  for (int r = kRounds - 1; r >= 0; --r) {
    const int low = (r % 2 == 0) ? low_bits_ : bits_ - low_bits_;
    const int high = bits_ - low;
    const uint64_t bottom = x >> high;
    const uint64_t top = (x ^ Round(r, bottom)) & Mask(high);
    x = (top << low) | bottom;
  }
  return x;
}

uint64_t Permutation::At(uint64_t i) const {
  STOKER_ASSERT(i < n_, "position {} of a permutation of {}", i, n_);
  uint64_t x = Forward(i);
  while (x >= n_) x = Forward(x);
  return x;
}

uint64_t Permutation::Inverse(uint64_t x) const {
  STOKER_ASSERT(x < n_, "element {} of a permutation of {}", x, n_);
  uint64_t i = Backward(x);
  while (i >= n_) i = Backward(i);
  return i;
}

}  // namespace stoker
