// The command line's check of unsigned values as typed (program/whole_number.h): what strtoull
// would wrap or read in another base is refused, saying why; decimal values pass.
#include "program/whole_number.h"

#include <gtest/gtest.h>

namespace stoker::cli {
namespace {

TEST(WholeNumber, DecimalValuesPass) {
  for (const char* value :
       {"0", "7", "10", "4096", "+5", " 12", "1G", "64M", "0K", "18446744073709551615"}) {
    EXPECT_EQ(WholeNumberProblem(value), "") << value;
  }
}

TEST(WholeNumber, AMinusSignIsRefusedWhateverComesBeforeIt) {
  for (const char* value : {"-1", "-0", " -5", "\t-5", "\n-1", "-1K"}) {
    EXPECT_EQ(WholeNumberProblem(value),
              std::string(value) + " is negative: give a whole number of 0 or more")
        << value;
  }
}

TEST(WholeNumber, OctalAndHexadecimalAreRefused) {
  for (const char* value : {"010", "00", "0x10", "0X1f", "+017", " 0x2"}) {
    const std::string problem = WholeNumberProblem(value);
    EXPECT_EQ(problem.rfind(std::string(value) + " is not a decimal number", 0), 0u) << problem;
  }
}

}  // namespace
}  // namespace stoker::cli
