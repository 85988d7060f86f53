// Test support: temporary folders and shard files for tests.
//
// Tests make their own small HDF5 files; no binary files are checked in. WriteTestShard writes a
// good shard the way stoker does. WriteRawShard crafts any file, including the broken ones that
// `stoker verify` must catch: it is test-only code and talks to HDF5 directly for that reason.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "io/shard_writer.h"

namespace stoker::testing {

// A fresh folder under $TMPDIR (or /tmp), removed with its contents at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Collective over `comm`: one folder for all ranks (rank 0 makes it and broadcasts its name; it
// removes it after a barrier at destruction).
class SharedTempDir {
 public:
  explicit SharedTempDir(MPI_Comm comm);
  ~SharedTempDir();
  SharedTempDir(const SharedTempDir&) = delete;
  SharedTempDir& operator=(const SharedTempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  MPI_Comm comm_;
  std::string path_;
};

// Writes a good shard whose documents are `docs` (each a vector of token ids).
void WriteTestShard(const std::string& path, const std::vector<std::vector<uint64_t>>& docs,
                    TokenType type = TokenType::kUint32, const ShardAttributes& attributes = {});

// An HDF5 dataset as a test wants it: any type name HDF5 knows here ("uint8" ... "int64",
// "float32", "float64"), any shape, values converted by HDF5 from int64.
struct RawArray {
  std::string type = "uint32";
  std::vector<uint64_t> dims;  // empty: 1-D of values.size()
  std::vector<int64_t> values;
  bool chunked = false;  // chunked layout (1 MiB chunks) instead of contiguous
};

struct RawShard {
  std::optional<RawArray> tokens;
  std::optional<RawArray> doc_offsets;
  std::map<std::string, int64_t> int_attributes = {{"stoker_format_version", 1}};
  std::map<std::string, std::string> string_attributes;
};

void WriteRawShard(const std::string& path, const RawShard& shard);

// Document offsets (n + 1 entries from 0) for the given document lengths.
std::vector<int64_t> OffsetsFor(const std::vector<uint64_t>& lengths);

}  // namespace stoker::testing
