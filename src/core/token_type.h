// Token types and widening. Shards store tokens in 1 to 8 byte integers; stoker reads them in the
// file's own type (HDF5's conversion costs 4.5x) and widens them here, in plain loops the
// compiler vectorizes. Pure: no I/O, no MPI, safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "stoker/token_type.h"

namespace stoker {

int TokenTypeSize(TokenType type);
bool TokenTypeSigned(TokenType type);
std::optional<TokenType> TokenTypeFrom(int size, bool is_signed);
std::optional<TokenType> TokenTypeFromName(std::string_view name);
// The narrowest unsigned type that holds ids in [0, vocab_size): uint16 up to 65,536 ids,
// uint32 up to 2^32, uint64 above. (Writers never use uint8: vocabularies are larger.)
TokenType TokenTypeForVocab(uint64_t vocab_size);

// "uint16" for one type, "mixed(uint16,uint32)" for several, "-" for none.
std::string TokenTypesLabel(std::span<const TokenType> types);

// Widens `count` tokens stored as `type` at `src` (native byte order) into `out`.
void WidenTokens(TokenType type, const void* src, size_t count, int64_t* out);

}  // namespace stoker
