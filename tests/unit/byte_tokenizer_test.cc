// The byte tokenizer of `stoker pack`: lossless for every byte value, including text that is not
// valid UTF-8; EOS and BOS sit above the bytes and vanish on decoding.
#include "tokens/byte_tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stoker {
namespace {

TEST(ByteTokenizerTest, EveryByteValueRoundTrips) {
  std::string text;
  for (int b = 0; b < 256; ++b) text.push_back(static_cast<char>(b));
  std::vector<uint64_t> tokens;
  EncodeBytes(text, &tokens);
  ASSERT_EQ(tokens.size(), 256u);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(tokens[b], static_cast<uint64_t>(b)) << "byte " << b;
  EXPECT_EQ(DecodeBytes(tokens), text);
}

TEST(ByteTokenizerTest, InvalidUtf8RoundTrips) {
  // A lone continuation byte, a truncated 3-byte sequence, an overlong '/', a surrogate half,
  // bytes that never occur in UTF-8, and an embedded NUL.
  const char kText[] = "\x80 a\xE2\x82 \xC0\xAF \xED\xA0\x80 \xFE\xFF \0 end";
  const std::string text(kText, sizeof(kText) - 1);
  std::vector<uint64_t> tokens;
  EncodeBytes(text, &tokens);
  ASSERT_EQ(tokens.size(), text.size());
  EXPECT_EQ(tokens[0], 0x80u);
  ASSERT_EQ(text.size(), 21u);
  EXPECT_EQ(tokens[16], 0u);
  EXPECT_EQ(DecodeBytes(tokens), text);
}

TEST(ByteTokenizerTest, MultibyteUtf8IsEncodedBytewise) {
  const std::string text = "na\xC3\xAFve \xE2\x82\xAC";  // "naïve €"
  std::vector<uint64_t> tokens;
  EncodeBytes(text, &tokens);
  EXPECT_EQ(tokens, (std::vector<uint64_t>{'n', 'a', 0xC3, 0xAF, 'v', 'e', ' ', 0xE2, 0x82, 0xAC}));
  EXPECT_EQ(DecodeBytes(tokens), text);
}

TEST(ByteTokenizerTest, EncodeAppendsAndDecodeSkipsSpecialIds) {
  std::vector<uint64_t> tokens = {kByteTokenizerBos};
  EncodeBytes("ab", &tokens);
  tokens.push_back(kByteTokenizerEos);
  EncodeBytes("c", &tokens);
  EXPECT_EQ(tokens, (std::vector<uint64_t>{257, 'a', 'b', 256, 'c'}));
  EXPECT_EQ(DecodeBytes(tokens), "abc");
}

TEST(ByteTokenizerTest, EmptyTextHasNoTokens) {
  std::vector<uint64_t> tokens;
  EncodeBytes("", &tokens);
  EXPECT_TRUE(tokens.empty());
  EXPECT_EQ(DecodeBytes(tokens), "");
}

TEST(ByteTokenizerTest, SpecialIdsSitAboveTheBytes) {
  EXPECT_EQ(kByteTokenizerEos, 256);
  EXPECT_EQ(kByteTokenizerBos, 257);
  EXPECT_EQ(kByteTokenizerVocab, 258);
  EXPECT_STREQ(kByteTokenizerName, "stoker-bytes-v1");
}

}  // namespace
}  // namespace stoker
