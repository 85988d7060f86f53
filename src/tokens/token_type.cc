#include "tokens/token_type.h"

#include <cstring>

#include "base/check.h"

namespace stoker {

namespace {

// Blocks of 16 go through a local array: with nothing to prove about `src` and `out` aliasing,
// GCC vectorizes the fixed-length inner loop at -O2 (the plain loop stays scalar, ~1 token per
// cycle, and widening is on the loader's hot path).
template <typename T>
void Widen(const void* src, size_t count, int64_t* out) {
  const auto* in = static_cast<const unsigned char*>(src);
  constexpr size_t kBlock = 16;
  size_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    T block[kBlock];
    std::memcpy(block, in + i * sizeof(T), sizeof(block));
    for (size_t j = 0; j < kBlock; ++j) out[i + j] = static_cast<int64_t>(block[j]);
  }
  for (; i < count; ++i) {
    T value;
    std::memcpy(&value, in + i * sizeof(T), sizeof(T));
    out[i] = static_cast<int64_t>(value);
  }
}

constexpr struct {
  TokenType type;
  int size;
  bool is_signed;
  const char* name;
} kTypes[] = {
    {TokenType::kUint8, 1, false, "uint8"},   {TokenType::kInt8, 1, true, "int8"},
    {TokenType::kUint16, 2, false, "uint16"}, {TokenType::kInt16, 2, true, "int16"},
    {TokenType::kUint32, 4, false, "uint32"}, {TokenType::kInt32, 4, true, "int32"},
    {TokenType::kUint64, 8, false, "uint64"}, {TokenType::kInt64, 8, true, "int64"},
};

const auto& Entry(TokenType type) {
  const auto index = static_cast<size_t>(type);
  STOKER_ASSERT(index < std::size(kTypes), "token type {}", index);
  return kTypes[index];
}

}  // namespace

const char* TokenTypeName(TokenType type) { return Entry(type).name; }
int TokenTypeSize(TokenType type) { return Entry(type).size; }
bool TokenTypeSigned(TokenType type) { return Entry(type).is_signed; }

std::optional<TokenType> TokenTypeFrom(int size, bool is_signed) {
  for (const auto& entry : kTypes) {
    if (entry.size == size && entry.is_signed == is_signed) return entry.type;
  }
  return std::nullopt;
}

std::optional<TokenType> TokenTypeFromName(std::string_view name) {
  for (const auto& entry : kTypes) {
    if (name == entry.name) return entry.type;
  }
  return std::nullopt;
}

TokenType TokenTypeForVocab(uint64_t vocab_size) {
  if (vocab_size <= (uint64_t{1} << 16)) return TokenType::kUint16;
  if (vocab_size <= (uint64_t{1} << 32)) return TokenType::kUint32;
  return TokenType::kUint64;
}

uint64_t LargestTokenId(TokenType type) {
  const int bits = TokenTypeSize(type) * 8 - (TokenTypeSigned(type) ? 1 : 0);
  return bits >= 63 ? kMaxTokenId : (uint64_t{1} << bits) - 1;
}

void WidenTokens(TokenType type, const void* src, size_t count, int64_t* out) {
  switch (type) {
    case TokenType::kUint8: return Widen<uint8_t>(src, count, out);
    case TokenType::kInt8: return Widen<int8_t>(src, count, out);
    case TokenType::kUint16: return Widen<uint16_t>(src, count, out);
    case TokenType::kInt16: return Widen<int16_t>(src, count, out);
    case TokenType::kUint32: return Widen<uint32_t>(src, count, out);
    case TokenType::kInt32: return Widen<int32_t>(src, count, out);
    case TokenType::kUint64: return Widen<uint64_t>(src, count, out);
    case TokenType::kInt64: return Widen<int64_t>(src, count, out);
  }
  STOKER_ASSERT(false, "token type {}", static_cast<int>(type));
}

std::string TokenTypesLabel(std::span<const TokenType> types) {
  if (types.empty()) return "-";
  if (types.size() == 1) return TokenTypeName(types.front());
  std::string label = "mixed(";
  for (size_t i = 0; i < types.size(); ++i) {
    label += (i > 0 ? "," : "") + std::string(TokenTypeName(types[i]));
  }
  return label + ")";
}

}  // namespace stoker
