// Where a shard's two arrays lie in its file, as discovery found them: what lets the shard reader
// (shard/shard_reader.h) read with pread instead of HDF5. Internal on purpose: a change to how
// the reader finds its bytes (another layout, chunk addresses) changes no public type. Discovery
// carries these beside the public corpus table, index for index (shard/discovery.h). Plain
// values; thread safe.
#pragma once

#include <cstdint>

namespace stoker {

// One array. When `direct` is true it is stored contiguously, unfiltered and little-endian at
// `byte_offset` in the file, and may be read with pread; otherwise only through HDF5.
// Eight bytes: a table of a million shards holds two each.
struct ArrayLocation {
  uint64_t direct : 1 = 0;
  uint64_t byte_offset : 63 = 0;  // a file of up to 2^63 bytes
  bool operator==(const ArrayLocation&) const = default;
};
static_assert(sizeof(ArrayLocation) == 8);

// Both arrays of one shard.
struct ArrayLocations {
  ArrayLocation tokens;   // /tokens
  ArrayLocation offsets;  // /doc_offsets
  bool operator==(const ArrayLocations&) const = default;
};

}  // namespace stoker
