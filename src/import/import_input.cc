#include "import/import_input.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <vector>

#include "base/check.h"
#include "os/files.h"
#include "os/posix_io.h"
#include "tokens/token_type.h"

namespace stoker {

namespace {

constexpr uint64_t kChunkBytes = uint64_t{8} << 20;  // a multiple of every token size

}  // namespace

InputFile::InputFile(std::string path) : path_(std::move(path)) {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    const int error = errno;
    STOKER_CHECK(error != ENOENT && error != ENOTDIR, ConfigError, "input {} does not exist",
                 path_);
    STOKER_CHECK(false, IoError, "cannot stat input {}: {}", path_, std::strerror(error));
  }
  STOKER_CHECK(S_ISREG(st.st_mode), ConfigError, "input {} is not a file", path_);
  stamp_ = StampOf(st);
}

void InputFile::CheckStamp(const FileStamp& now, const char* seen) const {
  if (now == stamp_) return;
  const char* what = now.device != stamp_.device || now.inode != stamp_.inode
                         ? "another file took its place"
                     : now.bytes != stamp_.bytes ? "its size changed"
                                                 : "it was written to";
  STOKER_CHECK(false, DataError,
               "input {} changed while it was imported ({}, seen {}; {} -> {} bytes): its "
               "documents would mix old and new contents. Import it again once nothing writes it",
               path_, what, seen, stamp_.bytes, now.bytes);
}

void InputFile::Release() const {
  if (fd_.get() < 0) return;
  struct stat open_file {}, at_path {};
  const bool stated = ::fstat(fd_.get(), &open_file) == 0;
  fd_ = UniqueFd();
  if (stated) CheckStamp(StampOf(open_file), "after reading it");
  if (::stat(path_.c_str(), &at_path) == 0) {
    CheckStamp(StampOf(at_path), "at its path after reading it");
  }
}

int InputFile::Fd() const {
  if (fd_.get() >= 0) return fd_.get();
  fd_ = UniqueFd(posix::Open(path_, O_RDONLY | O_CLOEXEC));
  STOKER_CHECK(fd_.get() >= 0, IoError, "cannot open input {}: {}", path_, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_.get(), &st) == 0) CheckStamp(StampOf(st), "when it was opened");
  ::posix_fadvise(fd_.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  return fd_.get();
}

void InputFile::Read(uint64_t offset, uint64_t bytes, void* out, std::string_view what) const {
  STOKER_CHECK(offset <= size() && bytes <= size() - offset, DataError,
               "{} is {} bytes, too short for {} (bytes {} to {})", path_, size(), what, offset,
               offset + bytes);
  const ReadResult read = ReadAt(Fd(), offset, bytes, out, path_);
  STOKER_CHECK(read.error == 0, IoError, "cannot read {} of {}: {}", what, path_,
               std::strerror(read.error));
  STOKER_CHECK(read.bytes == bytes, DataError,
               "{} ended at byte {} while reading {} (it shrank during the import?)", path_,
               offset + read.bytes, what);
}

void CheckSameType(const std::string& path, TokenType type, const std::string& first_path,
                   TokenType first_type) {
  STOKER_CHECK(type == first_type, DataError,
               "{} holds {} tokens but {} holds {}; one import writes a dataset of one type: "
               "import them separately",
               path, TokenTypeName(type), first_path, TokenTypeName(first_type));
}

ChunkReader::ChunkReader(const InputFile& file, uint64_t end, std::function<void(uint64_t)> on_read)
    : file_(file), end_(end), on_read_(std::move(on_read)) {}

std::span<const std::byte> ChunkReader::Piece(uint64_t offset, uint64_t max_bytes) {
  STOKER_ASSERT(offset < end_, "{}: piece at {} past the end {}", file_.path(), offset, end_);
  const Chunk* chunk = &chunks_[newest_];
  if (!chunk->Holds(offset)) chunk = &chunks_[1 - newest_];
  if (!chunk->Holds(offset)) {
    newest_ = 1 - newest_;
    Chunk& load = chunks_[newest_];
    const uint64_t bytes = std::min(kChunkBytes, end_ - offset);
    load.bytes.resize(bytes);
    file_.Read(offset, bytes, load.bytes.data(), "tokens");
    load.begin = offset;
    load.end = offset + bytes;
    if (on_read_) on_read_(bytes);
    chunk = &load;
  }
  return {chunk->bytes.data() + (offset - chunk->begin), std::min(max_bytes, chunk->end - offset)};
}

void ChunkReader::Copy(uint64_t offset, uint64_t bytes, void* out) {
  for (const Chunk& chunk : chunks_) {
    if (chunk.Holds(offset, bytes)) {
      std::memcpy(out, chunk.bytes.data() + (offset - chunk.begin), bytes);
      return;
    }
  }
  file_.Read(offset, bytes, out, "tokens");
}

TokenChecker::TokenChecker(TokenType type, std::optional<uint64_t> vocab_size)
    : type_(type),
      size_(TokenTypeSize(type)),
      limit_(vocab_size.value_or(uint64_t{1} << 63)),
      has_vocab_(vocab_size.has_value()) {}

namespace {

// Token i of `raw` (which need not be aligned for T: MDS columns are not).
template <typename T>
T TokenAt(std::span<const std::byte> raw, uint64_t i) {
  T value;
  std::memcpy(&value, raw.data() + i * sizeof(T), sizeof(T));
  return value;
}

}  // namespace

int64_t TokenChecker::Check(std::span<const std::byte> raw,
                            const std::function<std::string(uint64_t index)>& where) const {
  return VisitTokenType(type_, [&](auto zero) -> int64_t {
    using T = decltype(zero);
    const uint64_t count = raw.size() / sizeof(T);
    T lo = std::numeric_limits<T>::max(), hi = 0;
    for (uint64_t i = 0; i < count; ++i) {
      const T id = TokenAt<T>(raw, i);
      lo = std::min(lo, id);
      hi = std::max(hi, id);
    }
    // A negative id makes `lo` negative; an id at or above the limit (2^63 at most) makes `hi`.
    if ((count > 0 && lo < 0) || static_cast<uint64_t>(hi) >= limit_) [[unlikely]]
      ThrowBadToken(raw, where);
    return static_cast<int64_t>(hi);
  });
}

uint64_t TokenChecker::Find(std::span<const std::byte> raw, int64_t id) const {
  return VisitTokenType(type_, [&](auto zero) -> uint64_t {
    using T = decltype(zero);
    const uint64_t count = raw.size() / sizeof(T);
    const auto target = static_cast<T>(id);
    if (static_cast<int64_t>(target) != id) return count;  // no token of this type equals it
    for (uint64_t i = 0; i < count; ++i) {
      if (TokenAt<T>(raw, i) == target) return i;
    }
    return count;
  });
}

void TokenChecker::ThrowBadToken(std::span<const std::byte> raw,
                                 const std::function<std::string(uint64_t)>& where) const {
  const uint64_t count = raw.size() / size_;
  std::vector<int64_t> ids(count);
  WidenTokens(type_, raw.data(), count, ids.data());
  for (uint64_t i = 0; i < count; ++i) {
    const int64_t id = ids[i];
    // A uint64 id above 2^63 - 1 widens to a negative int64.
    if (id < 0 && type_ == TokenType::kUint64) {
      throw DataError(fmt::format("{}: token {} is above 2^63 - 1, the largest id stoker reads",
                                  where(i), static_cast<uint64_t>(id)));
    }
    STOKER_CHECK(id >= 0, DataError, "{}: token {} is negative", where(i), id);
    STOKER_CHECK(static_cast<uint64_t>(id) < limit_, DataError, "{}: token {} is not below {}",
                 where(i), id, has_vocab_ ? fmt::format("--vocab-size {}", limit_) : "2^63");
  }
  STOKER_ASSERT(false, "no bad token found among {} tokens", count);
}

void ImportContext::FeedDocument(ChunkReader* reader, uint64_t begin, uint64_t end, size_t input,
                                 uint64_t position, uint64_t end_position,
                                 const std::function<std::string(uint64_t)>& where) {
  const auto size = static_cast<uint64_t>(checker->size());
  sink->StartDoc((end - begin) / size, input, position, end_position);
  for (uint64_t at = begin; at < end;) {
    const std::span<const std::byte> piece = reader->Piece(at, end - at);
    AppendChecked(piece, (at - begin) / size, where);
    at += piece.size();
  }
  sink->EndDoc();
}

void ImportContext::FeedDocument(std::span<const std::byte> raw, size_t input, uint64_t position,
                                 uint64_t end_position,
                                 const std::function<std::string(uint64_t)>& where) {
  sink->StartDoc(raw.size() / checker->size(), input, position, end_position);
  AppendChecked(raw, 0, where);
  sink->EndDoc();
}

void ImportContext::AppendChecked(std::span<const std::byte> raw, uint64_t first,
                                  const std::function<std::string(uint64_t)>& where) {
  if (raw.empty()) return;
  sink->Append(raw, checker->Check(raw, [&](uint64_t i) { return where(first + i); }));
}

}  // namespace stoker
