// ShardReader: reads tokens and document offsets of one shard of a discovered corpus.
//
// Arrays stored contiguously and little-endian (every shard stoker writes) are read with pread at
// their byte offset: 2.5x faster than H5Dread and free of HDF5's global lock. Other layouts go
// through the h5 layer, which serializes every HDF5 call of the process itself (h5/h5.h); this
// class takes no lock. Tokens are read in the file's own type and widened here. stoker supports
// little-endian hosts only (docs/format.md): pread bytes are used as they lie in the file.
//
// Every system call on the file goes through the I/O seam (os/posix_io.h), so tests can fail it.
// A failing read throws IoError naming the file, its dataset, the array, the index and the byte
// offset. The file is always opened (also when only HDF5 reads it), so that Stat() can tell
// whether it changed since discovery (loader/shard_pool.h).
//
// One reader per thread; readers of the same file in different threads are independent.
// ForEachOffset streams a shard's /doc_offsets in blocks, for the code that walks them all.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "h5/h5.h"
#include "os/files.h"
#include "os/read_queue.h"
#include "shard/array_locations.h"
#include "stoker/corpus.h"

namespace stoker {

class ShardReader {
 public:
  // `root` is the corpus folder, `shard` a row of its table, `arrays` where discovery found its
  // arrays (shard/discovery.h), `dataset` its dataset's name (for messages; may be empty). The
  // file is opened here: IoError naming the file if it is gone. One read only through HDF5 is
  // opened by HDF5 at its first read (Hdf5Error then).
  ShardReader(const std::string& root, const ShardInfo& shard, const ArrayLocations& arrays,
              std::string_view dataset = {});
  // Without discovery's locations: HDF5 opens the file here and tells where the arrays lie (an
  // HDF5 open more per reader; for tools that read each shard once).
  ShardReader(const std::string& root, const ShardInfo& shard, std::string_view dataset = {});
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;
  ~ShardReader();

  // Tokens [start, start + count), in the file's type and byte order native to this machine.
  void ReadTokensRaw(uint64_t start, uint64_t count, void* out);
  // Tokens [start, start + count), widened. Uses `scratch` for the narrow copy.
  void ReadTokens(uint64_t start, uint64_t count, int64_t* out, std::vector<char>* scratch);
  // /doc_offsets entries [start, start + count) (int64 files are read as the same bits).
  void ReadOffsets(uint64_t start, uint64_t count, uint64_t* out);

  // For a ReadQueue (os/read_queue.h): the read of tokens [start, start + count) in the file's
  // type into `out`, or nullopt when the array is not stored directly (ReadTokensRaw then reads
  // it through HDF5). CheckTokenRead throws the IoError ReadTokensRaw would for what such a read
  // returned: a failed or short read names the file, the array, the index and the byte offset.
  std::optional<ReadRequest> TokenRequest(uint64_t start, uint64_t count, void* out) const;
  void CheckTokenRead(const ReadResult& read, uint64_t start, uint64_t count) const;
  // The same for /doc_offsets entries [start, start + count).
  std::optional<ReadRequest> OffsetRequest(uint64_t start, uint64_t count, uint64_t* out) const;
  void CheckOffsetRead(const ReadResult& read, uint64_t start, uint64_t count) const;

  // What fstat says of the open file now: IoError when it fails.
  FileStamp Stat() const;

  // Tells the kernel that this file is read at random places (posix_fadvise POSIX_FADV_RANDOM):
  // no read-ahead around each read, which on a corpus read in a shuffled order only fetches
  // bytes nobody asked for. A hint: nothing happens where the system ignores it.
  void AdviseRandomReads() const;
  // Opens the file a second time with O_DIRECT, for TokenRequest's reads
  // (ReadRequest::direct_fd, aligned as the file system asks). Where the file system has no
  // O_DIRECT (tmpfs) or the open fails, reads stay buffered.
  void OpenDirect();

  const ShardInfo& shard() const { return shard_; }
  const ArrayLocations& arrays() const { return arrays_; }
  const std::string& path() const { return path_; }
  // "PATH (dataset NAME)" or PATH, for messages.
  const std::string& where() const { return where_; }

 private:
  void CheckRead(const ReadResult& read, uint64_t byte_offset, uint64_t bytes, const char* what,
                 uint64_t index) const;
  const h5::File& Hdf5File();

  ShardInfo shard_;
  ArrayLocations arrays_;
  std::string path_;
  std::string where_;
  int fd_ = -1;
  int direct_fd_ = -1;
  uint32_t direct_align_ = 0;  // of direct_fd_ (os/files.h, DirectAlignment)
  std::optional<h5::File> file_;
};

// Throws the DataError of document `local` of `shard` (in the corpus `root`) whose /doc_offsets
// entries `begin` and `end` decrease or leave /tokens.
void CheckDocumentOffsets(const std::string& root, const ShardInfo& shard, uint64_t local,
                          uint64_t begin, uint64_t end);

// Calls fn(index, offset) for every entry of the shard's /doc_offsets, in order, reading `block`
// entries at a time (at least 1), so that memory stays bounded however large the shard. Entries
// of an int64 array arrive as the same bits. Exceptions of the reader and of `fn` propagate.
template <typename Fn>
void ForEachOffset(ShardReader& reader, uint64_t block, Fn&& fn) {
  const uint64_t n = reader.shard().docs + 1;
  std::vector<uint64_t> offsets(std::min(std::max<uint64_t>(block, 1), n));
  for (uint64_t start = 0; start < n; start += offsets.size()) {
    const uint64_t count = std::min<uint64_t>(offsets.size(), n - start);
    reader.ReadOffsets(start, count, offsets.data());
    for (uint64_t i = 0; i < count; ++i) fn(start + i, offsets[i]);
  }
}

}  // namespace stoker
