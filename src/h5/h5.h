// The HDF5 layer: the only code that includes <hdf5.h>. Every failing HDF5 call becomes
// stoker::Hdf5Error carrying HDF5's own explanation (its walked error stack, innermost first),
// and HDF5's automatic printing of error stacks is silenced once for the process.
//
// Files are opened with the default (POSIX) driver: stoker reads documents independently on every
// rank, which measured twice as fast as collective MPI-IO for small random reads.
//
// Not thread safe (neither is the MPI build of HDF5): all calls of a process go through one
// thread or hold Lock().
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace stoker::h5 {

// The process-wide lock for callers that use HDF5 from more than one thread.
std::mutex& Lock();

// What stoker needs to know of a dataset.
struct DatasetInfo {
  bool is_integer = false;
  int dims = 0;               // number of dimensions
  uint64_t length = 0;        // elements (product of the extents)
  int element_size = 0;       // bytes per element
  bool is_signed = false;
  bool little_endian = true;
  bool contiguous = false;    // contiguous layout with no filters
  std::optional<uint64_t> file_offset;  // byte offset of the data in the file, when contiguous
                                        // and allocated
  std::string type_name;      // for messages, e.g. "uint16", "float32"
};

// A stored integer type: size in bytes (1, 2, 4, 8) and signedness. Always written little-endian.
struct IntType {
  int size = 4;
  bool is_signed = false;
};

// True when the file at `path` starts with an HDF5 signature.
bool IsHdf5(const std::string& path);

class File {
 public:
  static File OpenReadOnly(const std::string& path);
  // Creates (or truncates) `path`. Writes are deterministic: no modification times are stored.
  static File Create(const std::string& path);

  File(File&& other) noexcept;
  File& operator=(File&& other) noexcept;
  ~File();

  bool HasDataset(const std::string& name) const;
  DatasetInfo Describe(const std::string& name) const;
  // Reads elements [start, start + count) of a 1-D integer dataset into `out`, in the dataset's
  // own width and signedness (no widening: widening in HDF5 costs 4.5x; callers widen).
  void ReadRaw(const std::string& name, uint64_t start, uint64_t count, void* out) const;

  bool HasAttribute(const std::string& name) const;
  // The attribute as an integer; throws Hdf5Error if it is not an integer scalar.
  int64_t ReadIntAttribute(const std::string& name) const;
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
