// base/: ThrowConfigProblems reports every problem of a configuration in one ConfigError;
// ByteReader refuses to read past its bytes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/bytes.h"
#include "base/check.h"
#include "stoker/error.h"

namespace stoker {
namespace {

TEST(ThrowConfigProblemsTest, OneConfigErrorListingEveryProblem) {
  const std::vector<std::string> problems = {"--files must be at least 1", "no datasets given"};
  try {
    ThrowConfigProblems("bad synth spec:", problems);
    ADD_FAILURE() << "returned";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "bad synth spec:\n  - --files must be at least 1\n  - no datasets given");
    EXPECT_FALSE(e.collective());
  }
}

}  // namespace
}  // namespace stoker

namespace stoker {
namespace {

// A string whose recorded length is larger than the bytes left, up to 2^64 - 1 (which wrapped a
// bound check written as pos + n <= size), is refused, not read past the end.
TEST(ByteReaderTest, AStringLongerThanTheBytesLeftIsRefused) {
  for (const uint64_t length : {uint64_t{5}, uint64_t{1} << 40, UINT64_MAX - 3, UINT64_MAX}) {
    ByteWriter out;
    out.Put<uint64_t>(length);
    out.Put<uint32_t>(7);  // 4 bytes: one short of the shortest length above
    ByteReader in(out.bytes());
    EXPECT_THROW(in.GetString(), InternalError) << length;
  }
}

}  // namespace
}  // namespace stoker
