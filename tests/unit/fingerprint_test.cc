// Content fingerprints (stoker/program/fingerprint.h).
#include "stoker/program/fingerprint.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace stoker {
namespace {

std::string Of(std::initializer_list<std::string_view> texts, uint64_t number) {
  Fingerprinter f;
  for (std::string_view t : texts) f.Add(t);
  f.Add(number);
  return f.Hex();
}

TEST(Fingerprint, Is32HexDigitsAndDependsOnEveryField) {
  const std::string base = Of({"web", "part-0.h5"}, 1000);
  EXPECT_EQ(base.size(), 32u);
  EXPECT_EQ(base.find_first_not_of("0123456789abcdef"), std::string::npos) << base;
  EXPECT_EQ(base, Of({"web", "part-0.h5"}, 1000));
  EXPECT_NE(base, Of({"web", "part-0.h5"}, 1001));
  EXPECT_NE(base, Of({"web", "part-1.h5"}, 1000));
  EXPECT_NE(base, Of({"part-0.h5", "web"}, 1000));
}

TEST(Fingerprint, TextsAreLengthPrefixed) {
  EXPECT_NE(Of({"ab", "c"}, 0), Of({"a", "bc"}, 0));
  EXPECT_NE(Of({"", "a"}, 0), Of({"a", ""}, 0));
}

// The value is part of every checkpoint (the corpus fingerprint it was saved with): if this
// changes, every saved checkpoint refuses its own corpus. Pinned to XXH3-128 over little-endian
// u64 fields and length-prefixed texts.
TEST(Fingerprint, ValueIsStableAcrossVersions) {
  // The expected value is XXH3_128bits of the 19 bytes (u64 3, "web", u64 42) from libxxhash.
  EXPECT_EQ(Of({"web"}, 42), "d7fa3fe1ff926efb9eae23bd414d84f2");
}

}  // namespace
}  // namespace stoker
