#include "order/permutation.h"

#include <gtest/gtest.h>

#include <vector>

namespace stoker {
namespace {

TEST(Permutation, IsABijectionForManySizesAndKeys) {
  for (uint64_t n : {0ull, 1ull, 2ull, 3ull, 4ull, 5ull, 7ull, 8ull, 9ull, 31ull, 100ull, 1000ull,
                     1023ull, 1024ull, 1025ull, 4097ull, 65537ull}) {
    for (uint64_t key : {0ull, 1ull, 0xdeadbeefull}) {
      const Permutation p(n, key);
      std::vector<bool> seen(n, false);
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t x = p.At(i);
        ASSERT_LT(x, n);
        ASSERT_FALSE(seen[x]) << "n=" << n << " key=" << key << " i=" << i;
        seen[x] = true;
        ASSERT_EQ(p.Inverse(x), i);
      }
    }
  }
}

TEST(Permutation, DifferentKeysGiveDifferentOrders) {
  const Permutation a(10000, 1), b(10000, 2);
  uint64_t same = 0;
  for (uint64_t i = 0; i < 10000; ++i) same += a.At(i) == b.At(i);
  EXPECT_LT(same, 10u);  // about 1 expected by chance
}

TEST(Permutation, MovesElementsFarAndUniformly) {
  // Positions of the first tenth of the order should be spread over the whole range.
  const uint64_t n = 100000;
  const Permutation p(n, 42);
  std::vector<uint64_t> buckets(10, 0);
  for (uint64_t i = 0; i < n / 10; ++i) ++buckets[p.At(i) * 10 / n];
  for (uint64_t b : buckets) {
    EXPECT_GT(b, 850u);
    EXPECT_LT(b, 1150u);
  }
}

}  // namespace
}  // namespace stoker
