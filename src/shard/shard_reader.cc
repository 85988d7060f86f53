#include "shard/shard_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>

#include "base/check.h"
#include "os/files.h"
#include "os/posix_io.h"
#include "shard/shard_check.h"
#include "tokens/token_type.h"

namespace stoker {

// Direct reads hand the file's little-endian bytes to the caller as they are.
static_assert(std::endian::native == std::endian::little,
              "stoker supports little-endian hosts only: ShardReader reads little-endian shards "
              "with pread and uses the bytes as they are (docs/format.md, Byte order)");

namespace {

// Written so that start + count cannot wrap around.
void CheckTokenRange(const std::string& path, const ShardInfo& shard, uint64_t start,
                     uint64_t count) {
  STOKER_CHECK(count <= shard.tokens && start <= shard.tokens - count, DataError,
               "{}: reading {} tokens from /tokens[{}] goes beyond its {} tokens", path, count,
               start, shard.tokens);
}

void CheckOffsetRange(const std::string& path, const ShardInfo& shard, uint64_t start,
                      uint64_t count) {
  const uint64_t entries = shard.docs + 1;
  STOKER_CHECK(count <= entries && start <= entries - count, DataError,
               "{}: reading {} entries from /doc_offsets[{}] goes beyond its {} entries", path,
               count, start, entries);
}

}  // namespace

void CheckDocumentOffsets(const std::string& root, const ShardInfo& shard, uint64_t local,
                          uint64_t begin, uint64_t end) {
  STOKER_CHECK(begin <= end && end <= shard.tokens, DataError,
               "{}/{}: /doc_offsets[{}] = {}, [{}] = {} do not lie within /tokens of {} tokens "
               "(stoker verify checks every offset)",
               root, shard.path, local, begin, local + 1, end, shard.tokens);
}

ShardReader::ShardReader(const std::string& root, const ShardInfo& shard,
                         const ArrayLocations& arrays, std::string_view dataset)
    : shard_(shard),
      arrays_(arrays),
      path_(root + "/" + shard.path),
      where_(dataset.empty() ? path_ : fmt::format("{} (dataset {})", path_, dataset)) {
  fd_ = posix::Open(path_, O_RDONLY | O_CLOEXEC);
  STOKER_CHECK(fd_ >= 0, IoError, "{}: cannot open (open): {}", where_, std::strerror(errno));
}

ShardReader::ShardReader(const std::string& root, const ShardInfo& shard, std::string_view dataset)
    : ShardReader(root, shard, ArrayLocations{}, dataset) {
  arrays_ = LocateArrays(Hdf5File());
}

FileStamp ShardReader::Stat() const {
  struct stat st {};
  STOKER_CHECK(posix::Fstat(fd_, &st, path_) == 0, IoError, "{}: cannot stat (fstat): {}", where_,
               std::strerror(errno));
  return StampOf(st);
}

void ShardReader::AdviseRandomReads() const { (void)::posix_fadvise(fd_, 0, 0, POSIX_FADV_RANDOM); }

void ShardReader::OpenDirect() {
  if (direct_fd_ >= 0 || !arrays_.tokens.direct) return;
  direct_fd_ = posix::Open(path_, O_RDONLY | O_CLOEXEC | O_DIRECT);
  if (direct_fd_ < 0) return;
  direct_align_ = DirectAlignment(direct_fd_);
  if (direct_align_ == 0) {  // opened, but the file system cannot read it so
    ::close(direct_fd_);
    direct_fd_ = -1;
  }
}

ShardReader::~ShardReader() {
  if (fd_ >= 0) ::close(fd_);
  if (direct_fd_ >= 0) ::close(direct_fd_);
}

const h5::File& ShardReader::Hdf5File() {
  if (!file_) file_.emplace(h5::File::OpenReadOnly(path_));
  return *file_;
}

void ShardReader::CheckRead(const ReadResult& read, uint64_t byte_offset, uint64_t bytes,
                            const char* what, uint64_t index) const {
  const uint64_t at = byte_offset + read.bytes;
  STOKER_CHECK(read.error == 0, IoError,
               "{}: reading {}[{}...] failed (pread of {} bytes at byte offset {}): {}", where_,
               what, index, bytes - read.bytes, at, std::strerror(read.error));
  STOKER_CHECK(read.bytes == bytes, IoError,
               "{}: file ends at byte {} inside {}[{}] (truncated or changed since discovery)",
               where_, at, what, index);
}

void ShardReader::ReadTokensRaw(uint64_t start, uint64_t count, void* out) {
  if (count == 0) return;
  if (const auto request = TokenRequest(start, count, out)) {
    CheckTokenRead(ReadAt(fd_, request->offset, request->bytes, out, path_), start, count);
    return;
  }
  Hdf5File().ReadRaw("/tokens", start, count, out);
}

std::optional<ReadRequest> ShardReader::TokenRequest(uint64_t start, uint64_t count,
                                                     void* out) const {
  CheckTokenRange(path_, shard_, start, count);
  if (!arrays_.tokens.direct) return std::nullopt;
  const uint64_t width = TokenTypeSize(shard_.token_type);
  return ReadRequest{.fd = fd_,
                     .direct_fd = direct_fd_,
                     .direct_align = direct_align_,
                     .offset = arrays_.tokens.byte_offset + start * width,
                     .bytes = count * width,
                     .out = out,
                     .path = &path_};
}

void ShardReader::CheckTokenRead(const ReadResult& read, uint64_t start, uint64_t count) const {
  const uint64_t width = TokenTypeSize(shard_.token_type);
  CheckRead(read, arrays_.tokens.byte_offset + start * width, count * width, "/tokens", start);
}

void ShardReader::ReadTokens(uint64_t start, uint64_t count, int64_t* out,
                             std::vector<char>* scratch) {
  CheckTokenRange(path_, shard_, start, count);  // before sizing `scratch` by `count`
  const uint64_t width = TokenTypeSize(shard_.token_type);
  if (width == 8) {  // already as wide as the output
    ReadTokensRaw(start, count, out);
    return;
  }
  scratch->resize(count * width);
  ReadTokensRaw(start, count, scratch->data());
  WidenTokens(shard_.token_type, scratch->data(), count, out);
}

void ShardReader::ReadOffsets(uint64_t start, uint64_t count, uint64_t* out) {
  if (count == 0) return;
  if (const auto request = OffsetRequest(start, count, out)) {
    CheckOffsetRead(ReadAt(fd_, request->offset, request->bytes, out, path_), start, count);
    return;
  }
  Hdf5File().ReadRaw("/doc_offsets", start, count, out);
}

std::optional<ReadRequest> ShardReader::OffsetRequest(uint64_t start, uint64_t count,
                                                      uint64_t* out) const {
  CheckOffsetRange(path_, shard_, start, count);
  if (!arrays_.offsets.direct) return std::nullopt;
  return ReadRequest{.fd = fd_,
                     .offset = arrays_.offsets.byte_offset + start * 8,
                     .bytes = count * 8,
                     .out = out,
                     .path = &path_};
}

void ShardReader::CheckOffsetRead(const ReadResult& read, uint64_t start, uint64_t count) const {
  CheckRead(read, arrays_.offsets.byte_offset + start * 8, count * 8, "/doc_offsets", start);
}

}  // namespace stoker
