// Token types: sizes, signedness and names agree with each other; the vocabulary rule picks the
// narrowest type; WidenTokens converts every type exactly (sign-extending the signed ones).
#include "tokens/token_type.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

namespace stoker {
namespace {

TEST(TokenType, SizesSignednessAndNames) {
  struct Expected {
    TokenType type;
    int size;
    bool is_signed;
    const char* name;
  };
  const Expected expected[] = {
      {TokenType::kUint8, 1, false, "uint8"},   {TokenType::kInt8, 1, true, "int8"},
      {TokenType::kUint16, 2, false, "uint16"}, {TokenType::kInt16, 2, true, "int16"},
      {TokenType::kUint32, 4, false, "uint32"}, {TokenType::kInt32, 4, true, "int32"},
      {TokenType::kUint64, 8, false, "uint64"}, {TokenType::kInt64, 8, true, "int64"},
  };
  for (const auto& e : expected) {
    SCOPED_TRACE(e.name);
    EXPECT_EQ(TokenTypeSize(e.type), e.size);
    EXPECT_EQ(TokenTypeSigned(e.type), e.is_signed);
    EXPECT_STREQ(TokenTypeName(e.type), e.name);
  }
}

TEST(TokenType, RoundTripsThroughSizeAndName) {
  for (TokenType type : kAllTokenTypes) {
    SCOPED_TRACE(TokenTypeName(type));
    EXPECT_EQ(TokenTypeFrom(TokenTypeSize(type), TokenTypeSigned(type)), type);
    EXPECT_EQ(TokenTypeFromName(TokenTypeName(type)), type);
  }
}

TEST(TokenType, RejectsUnknownSizesAndNames) {
  for (int size : {0, 3, 5, 16, -1}) {
    EXPECT_FALSE(TokenTypeFrom(size, false).has_value()) << size;
    EXPECT_FALSE(TokenTypeFrom(size, true).has_value()) << size;
  }
  for (const char* name : {"", "uint", "float32", "UINT16", "uint16 ", "int128"}) {
    EXPECT_FALSE(TokenTypeFromName(name).has_value()) << "'" << name << "'";
  }
}

TEST(TokenType, VocabularyBoundaries) {
  constexpr uint64_t k2To32 = uint64_t{1} << 32;
  EXPECT_EQ(TokenTypeForVocab(1), TokenType::kUint16);
  EXPECT_EQ(TokenTypeForVocab(256), TokenType::kUint16);  // never uint8
  EXPECT_EQ(TokenTypeForVocab(50257), TokenType::kUint16);
  EXPECT_EQ(TokenTypeForVocab(65535), TokenType::kUint16);
  EXPECT_EQ(TokenTypeForVocab(65536), TokenType::kUint16);  // ids 0..65535
  EXPECT_EQ(TokenTypeForVocab(65537), TokenType::kUint32);
  EXPECT_EQ(TokenTypeForVocab(128256), TokenType::kUint32);
  EXPECT_EQ(TokenTypeForVocab(k2To32 - 1), TokenType::kUint32);
  EXPECT_EQ(TokenTypeForVocab(k2To32), TokenType::kUint32);  // ids 0..2^32-1
  EXPECT_EQ(TokenTypeForVocab(k2To32 + 1), TokenType::kUint64);
  EXPECT_EQ(TokenTypeForVocab(std::numeric_limits<uint64_t>::max()), TokenType::kUint64);
}

// Stores `values` as T in native order and widens them back.
template <typename T>
std::vector<int64_t> StoreAndWiden(TokenType type, const std::vector<T>& values) {
  EXPECT_EQ(TokenTypeSize(type), static_cast<int>(sizeof(T)));
  EXPECT_EQ(TokenTypeSigned(type), std::numeric_limits<T>::is_signed);
  std::vector<int64_t> out(values.size() + 1, -12345);  // one guard element past the end
  WidenTokens(type, values.data(), values.size(), out.data());
  EXPECT_EQ(out.back(), -12345) << "wrote past count";
  out.pop_back();
  return out;
}

template <typename T>
void ExpectWidensExactly(TokenType type) {
  SCOPED_TRACE(TokenTypeName(type));
  using L = std::numeric_limits<T>;
  std::vector<T> values = {
      0, 1, 2, static_cast<T>(L::max() / 2), static_cast<T>(L::max() - 1), L::max()};
  if constexpr (L::is_signed) {
    values.insert(values.end(),
                  {static_cast<T>(-1), static_cast<T>(-2), L::min(), static_cast<T>(L::min() + 1)});
  }
  // Every value of the 1- and 2-byte types.
  if constexpr (sizeof(T) <= 2) {
    for (int64_t v = L::min(); v <= L::max(); ++v) values.push_back(static_cast<T>(v));
  }
  const std::vector<int64_t> out = StoreAndWiden(type, values);
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(out[i], static_cast<int64_t>(values[i])) << "at " << i;
  }
}

TEST(TokenType, WidensEveryTypeExactly) {
  ExpectWidensExactly<uint8_t>(TokenType::kUint8);
  ExpectWidensExactly<int8_t>(TokenType::kInt8);
  ExpectWidensExactly<uint16_t>(TokenType::kUint16);
  ExpectWidensExactly<int16_t>(TokenType::kInt16);
  ExpectWidensExactly<uint32_t>(TokenType::kUint32);
  ExpectWidensExactly<int32_t>(TokenType::kInt32);
  ExpectWidensExactly<uint64_t>(TokenType::kUint64);
  ExpectWidensExactly<int64_t>(TokenType::kInt64);
}

TEST(TokenType, WidenPinnedValues) {
  // Signed types sign-extend; unsigned ones zero-extend.
  EXPECT_EQ(StoreAndWiden<int8_t>(TokenType::kInt8, {-128, -1, 0, 127}),
            (std::vector<int64_t>{-128, -1, 0, 127}));
  EXPECT_EQ(StoreAndWiden<uint8_t>(TokenType::kUint8, {0x80, 0xff}),
            (std::vector<int64_t>{128, 255}));
  EXPECT_EQ(StoreAndWiden<int16_t>(TokenType::kInt16, {-32768, -300}),
            (std::vector<int64_t>{-32768, -300}));
  EXPECT_EQ(StoreAndWiden<uint16_t>(TokenType::kUint16, {0xffff, 50256}),
            (std::vector<int64_t>{65535, 50256}));
  EXPECT_EQ(StoreAndWiden<int32_t>(TokenType::kInt32, {INT32_MIN, -7}),
            (std::vector<int64_t>{-2147483648LL, -7}));
  EXPECT_EQ(StoreAndWiden<uint32_t>(TokenType::kUint32, {0xffffffffu, 128255u}),
            (std::vector<int64_t>{4294967295LL, 128255}));
  // Large uint64 ids up to 2^63 - 1 keep their value; above that (never a valid id) the bits are
  // kept, as int64 reads them.
  EXPECT_EQ(
      StoreAndWiden<uint64_t>(TokenType::kUint64,
                              {uint64_t{1} << 32, (uint64_t{1} << 40) + 3, uint64_t{INT64_MAX},
                               uint64_t{1} << 63, UINT64_MAX}),
      (std::vector<int64_t>{int64_t{1} << 32, (int64_t{1} << 40) + 3, INT64_MAX, INT64_MIN, -1}));
  EXPECT_EQ(StoreAndWiden<int64_t>(TokenType::kInt64, {INT64_MIN, -1, INT64_MAX}),
            (std::vector<int64_t>{INT64_MIN, -1, INT64_MAX}));
}

TEST(TokenType, WidenZeroCountWritesNothing) {
  for (TokenType type : kAllTokenTypes) {
    int64_t out = 99;
    WidenTokens(type, nullptr, 0, &out);
    EXPECT_EQ(out, 99) << TokenTypeName(type);
  }
}

TEST(TokenType, WidenLongRunsMatchScalarConversion) {
  // Long enough for the vectorized loops and their tails (counts not a multiple of 16/32).
  for (size_t count : {1u, 15u, 16u, 17u, 31u, 1000u, 4097u}) {
    std::vector<uint16_t> u16(count);
    std::vector<int8_t> i8(count);
    for (size_t i = 0; i < count; ++i) {
      u16[i] = static_cast<uint16_t>(i * 2654435761u);
      i8[i] = static_cast<int8_t>(i * 37);
    }
    std::vector<int64_t> out(count);
    WidenTokens(TokenType::kUint16, u16.data(), count, out.data());
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], u16[i]) << count << " at " << i;
    WidenTokens(TokenType::kInt8, i8.data(), count, out.data());
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], i8[i]) << count << " at " << i;
  }
}

TEST(TokenType, LabelsNameOneTypeOrAMixture) {
  EXPECT_EQ(TokenTypesLabel({}), "-");
  const std::vector<TokenType> one = {TokenType::kInt32};
  EXPECT_EQ(TokenTypesLabel(one), "int32");
  const std::vector<TokenType> two = {TokenType::kUint16, TokenType::kUint64};
  EXPECT_EQ(TokenTypesLabel(two), "mixed(uint16,uint64)");
}

}  // namespace
}  // namespace stoker
