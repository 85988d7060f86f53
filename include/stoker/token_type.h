// The integer types a shard may store its tokens in (docs/format.md): 1, 2, 4 or 8 bytes, signed
// or unsigned. Token ids are never negative, and never above 2^63 - 1: readers widen to int64.
//
// A plain enum and a pure function: no MPI, no HDF5, safe from any thread.
#pragma once

#include <cstdint>

namespace stoker {

enum class TokenType : uint8_t { kUint8, kInt8, kUint16, kInt16, kUint32, kInt32, kUint64, kInt64 };

// "uint8", "int8", ..., "int64": the names docs/format.md and `stoker inspect` use.
const char* TokenTypeName(TokenType type);

}  // namespace stoker
