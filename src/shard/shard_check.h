// ShardCheck and DescribeShard: the metadata checks of one shard, which discovery runs on every
// file of a corpus (shard/discovery.h). Not collective; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "h5/h5.h"
#include "shard/array_locations.h"
#include "stoker/corpus.h"

namespace stoker {

// What one shard's metadata says: its table row when it passed the checks, else its problems;
// and where its arrays lie (meaningful with `info`).
struct ShardCheck {
  std::optional<ShardInfo> info;
  ArrayLocations arrays;
  std::vector<Problem> problems;
};

// Not collective. Opens `root/rel_path` and checks everything the format promises that does not
// need reading the arrays: format version, both datasets' presence, type and shape, the first
// and last document offsets, the optional attributes. Never throws for a bad file.
ShardCheck DescribeShard(const std::string& root, const std::string& rel_path, uint32_t dataset);

// Where the arrays of the open shard `file` lie, for a reader not given discovery's locations.
// Throws Hdf5Error when an array is missing.
ArrayLocations LocateArrays(const h5::File& file);

}  // namespace stoker
