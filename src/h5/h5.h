// The HDF5 layer: the only code that includes <hdf5.h>. Every failing HDF5 call becomes
// stoker::Hdf5Error carrying HDF5's own explanation (its walked error stack, innermost first),
// and HDF5's automatic printing of error stacks is silenced once for the process. A file that
// holds something other than what the caller asked for (an attribute of the wrong type) is a
// DataError; a file that cannot be opened by the system is an IoError.
//
// Files are opened with the default (POSIX) driver: stoker reads documents independently on every
// rank, which measured twice as fast as collective MPI-IO for small random reads.
//
// Thread safety: the MPI build of HDF5 is not thread safe, so every function and method here
// (including File's constructors, destructor, move assignment and Close) holds one process-wide
// mutex while it calls HDF5. Any thread may use this layer; a File may move between threads but
// is not meant for concurrent use. The mutex is private to this layer: callers never lock it,
// so nothing can lock it twice. Code that reads a contiguous array with pread needs no lock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace stoker::h5 {

// What stoker needs to know of an HDF5 dataset (an array; not a stoker::DatasetInfo, which is a
// folder of shards).
struct ArrayInfo {
  bool is_integer = false;
  int dims = 0;          // number of dimensions
  uint64_t length = 0;   // elements (product of the extents)
  int element_size = 0;  // bytes per element
  bool is_signed = false;
  bool little_endian = true;
  bool contiguous = false;              // contiguous layout with no filters
  std::optional<uint64_t> file_offset;  // byte offset of the data in the file, when contiguous
                                        // and allocated
  std::string type_name;                // for messages, e.g. "uint16", "float32"
};

// A stored integer type: size in bytes (1, 2, 4, 8) and signedness. Always written little-endian.
struct IntType {
  int size = 4;
  bool is_signed = false;
};

// Transitional name, until src/shard/shard_check.cc says ArrayInfo.

// True when the file at `path` carries an HDF5 signature (where HDF5 looks for one), false when
// it does not. A file that cannot be opened (missing, permission denied) is an IoError naming it
// and the system's reason, never a "no".
bool IsHdf5(const std::string& path);

class File {
 public:
  static File OpenReadOnly(const std::string& path);
  // Opens an existing file to add to it (an attribute: `stoker verify --record`).
  static File OpenReadWrite(const std::string& path);
  // Creates (or truncates) `path`. Writes are deterministic: no modification times are stored.
  static File Create(const std::string& path);

  File(File&& other) noexcept;
  File& operator=(File&& other) noexcept;
  ~File();

  bool HasDataset(const std::string& name) const;
  ArrayInfo Describe(const std::string& name) const;
  // Reads elements [start, start + count) of a 1-D integer dataset into `out`, in the dataset's
  // own width and signedness (no widening: widening in HDF5 costs 4.5x; callers widen).
  void ReadRaw(const std::string& name, uint64_t start, uint64_t count, void* out) const;

  bool HasAttribute(const std::string& name) const;
  // The attribute as an integer. Throws DataError (naming the file, the attribute and what it
  // holds) when it is not one integer or its value is above 2^63 - 1; Hdf5Error when it cannot be
  // read.
  int64_t ReadIntAttribute(const std::string& name) const;
  // The attribute as a string. Throws DataError when it is not one string; Hdf5Error when it
  // cannot be read.
  std::string ReadStringAttribute(const std::string& name) const;
  void WriteIntAttribute(const std::string& name, int64_t value);
  void WriteStringAttribute(const std::string& name, const std::string& value);

  // Creates a 1-D contiguous dataset of `length` elements and returns nothing; fill it with
  // WriteRaw. Values are given in the native layout of `type`.
  void CreateIntDataset(const std::string& name, IntType type, uint64_t length);
  void WriteRaw(const std::string& name, IntType type, uint64_t start, uint64_t count,
                const void* values);

  // Closes the file now, reporting errors (the destructor closes silently).
  void Close();
  const std::string& path() const { return path_; }

 private:
  File(int64_t id, std::string path) : id_(id), path_(std::move(path)) {}
  int64_t id_ = -1;  // hid_t
  std::string path_;
};

}  // namespace stoker::h5
