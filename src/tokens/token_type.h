// Token types and widening. Shards store tokens in 1 to 8 byte integers; stoker reads them in the
// file's own type (HDF5's conversion costs 4.5x) and widens them here, in plain loops the
// compiler vectorizes. Pure: no I/O, no MPI, safe from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/check.h"
#include "stoker/token_type.h"

namespace stoker {

// Every token type, narrowest first.
inline constexpr std::array<TokenType, 8> kAllTokenTypes = {
    TokenType::kUint8,  TokenType::kInt8,  TokenType::kUint16, TokenType::kInt16,
    TokenType::kUint32, TokenType::kInt32, TokenType::kUint64, TokenType::kInt64};

// The largest token id stoker stores or reads: readers widen ids to int64.
inline constexpr uint64_t kMaxTokenId = (uint64_t{1} << 63) - 1;

int TokenTypeSize(TokenType type);
bool TokenTypeSigned(TokenType type);
std::optional<TokenType> TokenTypeFrom(int size, bool is_signed);
std::optional<TokenType> TokenTypeFromName(std::string_view name);
// The narrowest unsigned type that holds ids in [0, vocab_size): uint16 up to 65,536 ids,
// uint32 up to 2^32, uint64 above. (Writers never use uint8: vocabularies are larger.)
TokenType TokenTypeForVocab(uint64_t vocab_size);

// The largest id a token of `type` holds: its type's maximum, never above kMaxTokenId.
uint64_t LargestTokenId(TokenType type);

// Calls f(T{}) with T the C++ integer type of `type`, and returns what it returns.
template <typename F>
decltype(auto) VisitTokenType(TokenType type, F&& f) {
  switch (type) {
    case TokenType::kUint8:
      return f(uint8_t{});
    case TokenType::kInt8:
      return f(int8_t{});
    case TokenType::kUint16:
      return f(uint16_t{});
    case TokenType::kInt16:
      return f(int16_t{});
    case TokenType::kUint32:
      return f(uint32_t{});
    case TokenType::kInt32:
      return f(int32_t{});
    case TokenType::kUint64:
      return f(uint64_t{});
    case TokenType::kInt64:
      return f(int64_t{});
  }
  STOKER_ASSERT(false, "token type {}", static_cast<int>(type));
}

// "uint16" for one type, "mixed(uint16,uint32)" for several, "-" for none.
std::string TokenTypesLabel(std::span<const TokenType> types);

// Widens `count` tokens stored as `type` at `src` (native byte order) into `out`.
void WidenTokens(TokenType type, const void* src, size_t count, int64_t* out);

}  // namespace stoker
