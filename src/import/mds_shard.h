// One Mosaic Streaming MDS shard as index.json describes it (import/mds_input.cc reads the
// index), and its bytes loaded and checked against that description: the file's size, every
// hash index.json lists for it that stoker computes (import/hex_digest.h: for the stored file
// and, of a compressed shard, for the decompressed bytes too) and, of a zstd shard, the size its
// frames say they hold, before any memory is taken for the decompressed bytes. Not collective;
// thread safe (no shared state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "stoker/token_type.h"

namespace stoker {

// How the column's values are laid out in a sample (the MDS `ndarray` and `bytes` encodings).
struct ColumnCoding {
  std::string text;               // as index.json says it
  std::optional<TokenType> type;  // nullopt: a type code leads each sample (plain `ndarray`)
  bool shape_in_sample = false;   // `ndarray` without a fixed shape: ndim and shape lead
};

// Hash kind ("sha1", "xxh64", ...) -> hex digest, as index.json lists them for one file.
using MdsHashes = std::map<std::string, std::string>;

struct MdsShard {
  std::string index;  // "FOLDER/index.json, shard N", for messages
  std::string path;   // the file to read (the compressed one when compressed)
  uint64_t stored_bytes = 0, raw_bytes = 0, samples = 0;
  bool zstd = false;
  MdsHashes stored_hashes;  // of the file as stored (zip_data's when compressed)
  MdsHashes raw_hashes;     // of the decompressed bytes (raw_data's), when compressed
  std::vector<std::optional<uint64_t>> column_sizes;  // nullopt: sized in each sample
  size_t column = 0;                                  // the token column's index
  ColumnCoding coding;
  uint64_t first_byte = 0;  // of the whole input's stored bytes
};

// The shard's bytes, decompressed, checked as the top of this file says. DataError naming the
// file, index.json and what differs.
std::vector<std::byte> LoadShard(const MdsShard& shard);

// The hash kinds `shard` lists that stoker does not compute (and so does not check).
std::set<std::string> UncheckedHashKinds(const MdsShard& shard);

}  // namespace stoker
