// Numbers with thousands separators and plain-text tables (base/text_table.h).
#include "base/text_table.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace stoker {
namespace {

TEST(TextTable, GroupThousandsPutsACommaEveryThreeDigits) {
  EXPECT_EQ(GroupThousands(0), "0");
  EXPECT_EQ(GroupThousands(999), "999");
  EXPECT_EQ(GroupThousands(1000), "1,000");
  EXPECT_EQ(GroupThousands(1234567), "1,234,567");
  EXPECT_EQ(GroupThousands(UINT64_MAX), "18,446,744,073,709,551,615");
}

TEST(TextTable, ColumnsArePaddedToTheirWidestCellAndAlignedAsAsked) {
  const std::string table =
      Tabulate({{"dataset", "tokens"}, {"web", "1,000"}, {"books", "12"}}, /*left=*/{0});
  EXPECT_EQ(table,
            "dataset  tokens\n"
            "web       1,000\n"
            "books        12\n");
}

TEST(TextTable, TrailingSpacesOfALeftAlignedLastColumnAreCut) {
  EXPECT_EQ(Tabulate({{"a", "long name"}, {"bb", "x"}}, {0, 1}), "a   long name\nbb  x\n");
}

}  // namespace
}  // namespace stoker
