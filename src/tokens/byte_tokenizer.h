// The built-in byte-level tokenizer of `stoker pack --format text`: token i < 256 is the byte i;
// EOS and BOS take the two ids above the bytes. Lossless for any input, including invalid UTF-8.
// Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stoker {

inline constexpr int64_t kByteTokenizerEos = 256;
inline constexpr int64_t kByteTokenizerBos = 257;
inline constexpr int64_t kByteTokenizerVocab = 258;
inline constexpr const char* kByteTokenizerName = "stoker-bytes-v1";

// Appends the tokens of `text` to `out`.
void EncodeBytes(std::string_view text, std::vector<uint64_t>* out);
// The inverse on byte ids; ids >= 256 (EOS, BOS) are skipped.
std::string DecodeBytes(const std::vector<uint64_t>& tokens);

}  // namespace stoker
