// Mosaic Streaming MDS folders as an ImportInput (import/import_input.h): one sample's `column`
// is one document, samples in order, shards in the order of each folder's index.json.
//
// index.json version 2: {"version": 2, "shards": [{"format": "mds", "column_names": [...],
// "column_encodings": [...], "column_sizes": [...], "compression": null | "zstd[:LEVEL]",
// "raw_data": {"basename", "bytes", "hashes"}, "zip_data": null | {"basename", "bytes",
// "hashes"}, "samples"}, ...]}; "hashes" maps a kind ("sha1", "xxh64", ...) to the hex digest of
// the file (import/mds_shard.h checks them).
// A shard file (zstd-compressed as one whole when "compression" says so): u32 sample count,
// u32[count + 1] byte offsets of the samples in the file (the last one its size), the writer's
// configuration (JSON, skipped), then the samples, one after the other; a sample is a u32 size for
// each column of no fixed size, then every column's bytes.
//
// The column must hold token ids: `ndarray:<integer type>[:shape]`, plain `ndarray` (type and
// shape in each sample), or `bytes` holding an array of `bytes_dtype` (int64, as llm-foundry
// writes `tokens`). Every count, offset, size, hash and token is checked; a shard is read whole
// (and decompressed, into the size its zstd frames declare) into memory: MDS shards are 64 MB by
// default. Hash kinds stoker does not compute are named by Warnings().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "import/import_input.h"

namespace stoker {

// Reads and checks every folder's index.json. Throws DataError or ConfigError naming the file.
std::unique_ptr<ImportInput> OpenMdsInput(const std::vector<std::string>& folders,
                                          const std::string& column,
                                          std::optional<TokenType> bytes_dtype);

}  // namespace stoker
