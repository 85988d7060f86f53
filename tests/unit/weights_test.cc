// The --weights syntax (stoker/weights.h).
#include "stoker/weights.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "stoker/error.h"

namespace stoker {
namespace {

TEST(Weights, ParsesRelativeWeightsWithSpaces) {
  const std::map<std::string, double> expected = {{"web", 0.7}, {"code", 2}, {"books", 0}};
  EXPECT_EQ(ParseWeights("web=0.7,code=2,books=0"), expected);
  EXPECT_EQ(ParseWeights(" web = 0.7 ,\tcode=2, books=0 "), expected);
  EXPECT_EQ(ParseWeights("a=1e-3"), (std::map<std::string, double>{{"a", 0.001}}));
  EXPECT_TRUE(ParseWeights("").empty());
  EXPECT_TRUE(ParseWeights("  ").empty());
}

TEST(Weights, BadEntriesAreRefusedQuotingThem) {
  const std::pair<const char*, const char*> cases[] = {
      {"web", "'web' is not NAME=WEIGHT"},        {"=1", "'=1' has no dataset name"},
      {"web=abc", "'abc' is not a number"},       {"web=1x", "'1x' is not a number"},
      {"web=inf", "'inf' is not a number"},       {"web=nan", "'nan' is not a number"},
      {"web=-1", "weights must be >= 0"},         {"web=1,web=2", "names dataset 'web' twice"},
      {"web=1,,code=1", "'' is not NAME=WEIGHT"},
  };
  for (const auto& [text, message] : cases) {
    try {
      ParseWeights(text);
      ADD_FAILURE() << text << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << text << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace stoker
