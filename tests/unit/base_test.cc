// base/: ThrowConfigProblems reports every problem of a configuration in one ConfigError.
#include <gtest/gtest.h>

#include <string>
#include <vector>

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
