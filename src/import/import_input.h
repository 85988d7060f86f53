// What every import format shares: ImportInput (one format's reader of all the inputs of a run),
// InputFile (one input file, read with pread), ChunkReader (a file's bytes in large sequential
// reads) and TokenChecker (token ids widened and checked against the shard format's rules).
//
// How the ranks split the work (import/import.h): an input counts `units()` in order (Megatron:
// documents; npy: token positions; MDS: shards) and says which unit is the first to start at or
// after a byte of its `bytes()` (UnitAt). Rank r imports units [UnitAt(r*B/W), UnitAt((r+1)*B/W)):
// every rank computes its own start, the starts are all-gathered and made non-decreasing, so the
// ranks cover every unit exactly once whatever a corrupt index says.
//
// Not thread safe; not collective (import/import.cc makes the collectives).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "import/import_sink.h"
#include "os/files.h"
#include "os/unique_fd.h"
#include "stoker/token_type.h"

namespace stoker {

// One input file. Throws ConfigError when it is missing or not a file. It is opened at its first
// read and stays open until Release(), so that an import of thousands of files holds only the
// ones it is reading (IoError when it cannot be opened). Its stamp (os/files.h: device, inode,
// size, modification time) is taken when it is constructed and checked at every open and
// Release(): a file written, truncated or replaced while the import reads it is a DataError
// naming it, as its documents would otherwise mix its old and new contents.
class InputFile {
 public:
  explicit InputFile(std::string path);
  InputFile(InputFile&&) = default;
  InputFile& operator=(InputFile&&) = default;

  const std::string& path() const { return path_; }
  uint64_t size() const { return stamp_.bytes; }
  // Closes the file until the next read, after checking that it is still the file it was.
  void Release() const;
  // Reads exactly `bytes` at `offset`. DataError when the file ends first ("PATH is N bytes,
  // too short for WHAT"), IoError when a read fails.
  void Read(uint64_t offset, uint64_t bytes, void* out, std::string_view what) const;
  template <typename T>
  T ReadValue(uint64_t offset, std::string_view what) const {
    T value;
    Read(offset, sizeof(T), &value, what);
    return value;
  }
  template <typename T>
  std::vector<T> ReadArray(uint64_t offset, uint64_t count, std::string_view what) const {
    std::vector<T> values(count);
    Read(offset, count * sizeof(T), values.data(), what);
    return values;
  }

 private:
  int Fd() const;
  // DataError unless `now` (the open file's or the path's) is the stamp taken at the start.
  void CheckStamp(const FileStamp& now, const char* seen) const;

  std::string path_;
  mutable UniqueFd fd_;
  FileStamp stamp_;
};

// DataError unless the input at `path` holds tokens of the type of the first input: one import
// writes a dataset of one type.
void CheckSameType(const std::string& path, TokenType type, const std::string& first_path,
                   TokenType first_type);

// A file's bytes up to `end`, read in chunks of 8 MiB from wherever the caller asks: sequential
// pieces cost one read a chunk. The chunk before the newest is kept too, so that a reader that
// looked ahead into the next chunk (where does this document end?) can still go back to the
// document's start. `on_read` is told the bytes of every read (progress).
class ChunkReader {
 public:
  ChunkReader(const InputFile& file, uint64_t end, std::function<void(uint64_t)> on_read);
  // The bytes from `offset` on, at most `max_bytes` and never past `end`; at least one byte when
  // offset < end. Valid until the next call.
  std::span<const std::byte> Piece(uint64_t offset, uint64_t max_bytes);
  // Copies `bytes` at `offset`: from a chunk held when it holds them, else read on their own.
  void Copy(uint64_t offset, uint64_t bytes, void* out);

 private:
  struct Chunk {
    std::vector<std::byte> bytes;
    uint64_t begin = 0, end = 0;
    bool Holds(uint64_t offset, uint64_t n = 1) const {
      return offset >= begin && offset + n <= end;
    }
  };
  const InputFile& file_;
  uint64_t end_;
  std::function<void(uint64_t)> on_read_;
  Chunk chunks_[2];  // chunks_[newest_] is the newest
  int newest_ = 0;
};

// Checks tokens of one type in place, in their own type (one pass the compiler vectorizes): never
// negative, below `limit` (vocab_size, or 2^63 when there is none: readers widen ids to int64).
class TokenChecker {
 public:
  TokenChecker(TokenType type, std::optional<uint64_t> vocab_size);
  TokenType type() const { return type_; }
  int size() const { return size_; }
  // The largest id of `raw` (whole tokens; 0 when empty). Throws DataError "WHERE(i): token V is
  // negative" (or above the limit), `where` naming the file and the position of token i of `raw`.
  int64_t Check(std::span<const std::byte> raw,
                const std::function<std::string(uint64_t index)>& where) const;
  // The index in `raw` of the first token equal to `id`, or the number of tokens when none is.
  uint64_t Find(std::span<const std::byte> raw, int64_t id) const;

 private:
  [[noreturn]] void ThrowBadToken(std::span<const std::byte> raw,
                                  const std::function<std::string(uint64_t)>& where) const;

  TokenType type_;
  int size_;
  uint64_t limit_;
  bool has_vocab_;
};

// What a format's reader hands each document to, and what it counts.
struct ImportContext {
  ImportSink* sink = nullptr;
  TokenChecker* checker = nullptr;
  std::function<void(uint64_t bytes)> on_read;  // progress: bytes read from the inputs
  uint64_t eos_removed = 0;                     // documents whose final eos_id the reader removed
  uint64_t eos_kept = 0;  // documents that end in the eos_id and keep it (Megatron --eos-id)

  // Feeds the tokens of `reader`'s bytes [begin, end) to the sink as one document (its length is
  // (end - begin) / token size), [position, end_position) of input `input`, checking every
  // token; `where(i)` names token i of the document in messages.
  void FeedDocument(ChunkReader* reader, uint64_t begin, uint64_t end, size_t input,
                    uint64_t position, uint64_t end_position,
                    const std::function<std::string(uint64_t)>& where);
  // The same for a document in memory (`raw`: whole tokens).
  void FeedDocument(std::span<const std::byte> raw, size_t input, uint64_t position,
                    uint64_t end_position, const std::function<std::string(uint64_t)>& where);

 private:
  // Checks `raw`, tokens [first, ...) of the document, and appends it to the sink.
  void AppendChecked(std::span<const std::byte> raw, uint64_t first,
                     const std::function<std::string(uint64_t)>& where);
};

// One format's reader of all the inputs of a run.
class ImportInput {
 public:
  virtual ~ImportInput() = default;
  virtual TokenType type() const = 0;
  // The bytes the ranks split (Megatron: of the .bin files; npy: of the token arrays; MDS: of the
  // shard files as stored).
  virtual uint64_t bytes() const = 0;
  virtual uint64_t units() const = 0;
  // The first unit that starts at or after byte `byte` of bytes(); units() when none does.
  virtual uint64_t UnitAt(uint64_t byte) = 0;
  // Feeds units [first, last) to the context's sink, in order.
  virtual void Import(uint64_t first, uint64_t last, ImportContext* context) = 0;
  // The input files as the shards' `source` attribute names them, and what the ranges of an
  // input it gives count ("documents", "token positions", "samples": docs/format.md).
  virtual std::vector<SourceFile> Sources() const = 0;
  virtual const char* positions() const = 0;
  // What the user should hear that is not an error (MDS: hash kinds it does not check).
  virtual std::vector<std::string> Warnings() const { return {}; }
};

}  // namespace stoker
