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
struct ArrayLocation {
  bool direct = false;
  uint64_t byte_offset = 0;
  bool operator==(const ArrayLocation&) const = default;
};

// Both arrays of one shard.
struct ArrayLocations {
  ArrayLocation tokens;   // /tokens
  ArrayLocation offsets;  // /doc_offsets
  bool operator==(const ArrayLocations&) const = default;
};

}  // namespace stoker
