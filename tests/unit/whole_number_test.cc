// The command line's check of integer values as typed (program/whole_number.h): what strtoull or
// strtoll would wrap, saturate or read in another base is refused, saying why; decimal values
// pass.
#include "program/whole_number.h"

#include <gtest/gtest.h>

namespace stoker::cli {
namespace {

TEST(WholeNumber, DecimalValuesPass) {
  for (const char* value :
       {"0", "7", "10", "4096", "1G", "64M", "0K", "18446744073709551615", "auto"}) {
    EXPECT_EQ(WholeNumberProblem(value), "") << value;
  }
  for (const char* value : {"0", "-7", "9223372036854775807", "-9223372036854775808"}) {
    EXPECT_EQ(WholeNumberProblem(value, /*is_signed=*/true), "") << value;
  }
}

TEST(WholeNumber, AMinusSignIsRefusedWhereUnsigned) {
  for (const char* value : {"-1", "-0", "-1K"}) {
    EXPECT_EQ(WholeNumberProblem(value),
              std::string(value) + " is negative: give a whole number of 0 or more")
        << value;
  }
}

TEST(WholeNumber, WhiteSpaceAndAPlusSignAreRefused) {
  for (const char* value : {" 12", "12 ", "\t-5", "\n1", " -5"}) {
    EXPECT_EQ(WholeNumberProblem(value, true),
              std::string(value) + " has white space around it: give the number alone")
        << value;
  }
  EXPECT_EQ(WholeNumberProblem("+5"), "+5 has a '+' sign: give the number alone");
}

TEST(WholeNumber, OctalAndHexadecimalAreRefused) {
  for (const char* value : {"010", "00", "0x10", "0X1f", "-010", "-0x2"}) {
    const std::string problem = WholeNumberProblem(value, true);
    EXPECT_EQ(problem.rfind(std::string(value) + " is not a decimal number", 0), 0u) << problem;
  }
}

TEST(WholeNumber, NumbersBeyond64BitsAreRefused) {
  EXPECT_EQ(WholeNumberProblem("18446744073709551616"),
            "18446744073709551616 is beyond 64 bits: at most 18446744073709551615");
  EXPECT_EQ(WholeNumberProblem("99999999999999999999999"),
            "99999999999999999999999 is beyond 64 bits: at most 18446744073709551615");
  EXPECT_EQ(WholeNumberProblem("9223372036854775808", true),
            "9223372036854775808 is beyond 64 bits: at most 9223372036854775807");
  EXPECT_EQ(WholeNumberProblem("-9223372036854775809", true),
            "-9223372036854775809 is beyond 64 bits: at least -9223372036854775808");
}

}  // namespace
}  // namespace stoker::cli
