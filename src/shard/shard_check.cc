// DescribeShard: the metadata checks of one shard (shard/shard_check.h).
//
// Discovery runs these checks on every file of a corpus, so they avoid HDF5 calls that a plain
// system call can answer, and asks HDF5 the questions that only explain a failure after the
// failure (docs/benchmarks.md has the figures). One descriptor gives the size and, when
// /doc_offsets is stored as is, its first and last entries by pread (two HDF5 reads cost ~30 us a
// file, two preads ~1); the HDF5 signature is looked for, and a dataset looked up by name, only
// when opening the file or the dataset failed, to say "not an HDF5 file" or "missing dataset".
#include "shard/shard_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <string_view>

#include "base/check.h"
#include "h5/h5.h"
#include "os/files.h"
#include "os/posix_io.h"
#include "os/unique_fd.h"
#include "shard/discovery.h"
#include "tokens/content_checksum.h"
#include "tokens/token_type.h"

namespace stoker {

namespace {

constexpr int64_t kFormatVersion = 1;
// The 8 bytes that open every HDF5 superblock.
constexpr char kHdf5Signature[8] = {'\211', 'H', 'D', 'F', '\r', '\n', '\032', '\n'};

using Fd = UniqueFd;

// Reads up to `bytes` at byte `offset` of `path` into `out` and returns how many it read: fewer
// only where the file ends. Throws IoError when the read fails.
uint64_t ReadUpTo(int fd, uint64_t offset, uint64_t bytes, void* out, const std::string& path) {
  const ReadResult read = ReadAt(fd, offset, bytes, out, path);
  STOKER_CHECK(read.error == 0, IoError, "cannot read byte {}: {}", offset + read.bytes,
               std::strerror(read.error));
  return read.bytes;
}

// True when the HDF5 signature is where HDF5 itself looks for it (H5Fis_hdf5, H5Fopen): at byte
// 0, or, after a user block, at a power of two from 512 on, inside the file.
bool HasHdf5Signature(int fd, uint64_t file_bytes, const std::string& path) {
  char found[sizeof kHdf5Signature];
  for (uint64_t at = 0; at < file_bytes; at = at == 0 ? 512 : at * 2) {
    if (ReadUpTo(fd, at, sizeof found, found, path) == sizeof found &&
        std::memcmp(found, kHdf5Signature, sizeof found) == 0) {
      return true;
    }
  }
  return false;
}

class ShardChecker {
 public:
  ShardChecker(const std::string& rel_path, ShardCheck* out) : rel_(rel_path), out_(out) {}

  // Where the arrays lie, filled in as they are described.
  ArrayLocations& arrays() { return out_->arrays; }

  void Add(std::string object, std::string message, std::optional<uint64_t> index = {}) {
    out_->problems.push_back({rel_, std::move(object), index, std::move(message)});
  }

  // Checks the format version attribute. False when the file cannot be read further.
  bool CheckVersion(const h5::File& file) {
    if (!file.HasAttribute("stoker_format_version")) {
      Add("stoker_format_version", "missing format version attribute (this stoker reads 1)");
      return false;
    }
    const auto version = ReadPresentInt(file, "stoker_format_version");
    if (!version) return false;
    if (*version != kFormatVersion) {
      Add("stoker_format_version",
          fmt::format("unsupported format version {} (this stoker reads 1)", *version));
      return false;
    }
    return true;
  }

  // The optional integer attribute `name`: nullopt when absent, or after reporting a bad one.
  std::optional<int64_t> ReadInt(const h5::File& file, const std::string& name) {
    if (!file.HasAttribute(name)) return std::nullopt;
    return ReadPresentInt(file, name);
  }

  // The optional string attribute `name`: nullopt when absent, or after reporting a bad one.
  std::optional<std::string> ReadString(const h5::File& file, const std::string& name) {
    if (!file.HasAttribute(name)) return std::nullopt;
    try {
      return file.ReadStringAttribute(name);
    } catch (const DataError& e) {  // not one string: says what it is
      Add(name, WithoutPathPrefix(e.what(), file.path()));
    } catch (const Hdf5Error& e) {
      Add(name, "cannot be read: " + WithoutPathPrefix(e.what(), file.path()));
    }
    return std::nullopt;
  }

  // The description of a 1-D integer dataset, or nullopt after reporting why not.
  std::optional<h5::ArrayInfo> DescribeArray(const h5::File& file, const std::string& name) {
    std::optional<h5::ArrayInfo> info;
    try {
      info = file.Describe(name);
    } catch (const Hdf5Error&) {
      // Asked only now: looking the name up first costs 5 us a dataset on every good file.
      if (file.HasDataset(name)) throw;
      Add(name, "missing dataset");
      return std::nullopt;
    }
    bool ok = true;
    if (!info->is_integer) {
      Add(name, fmt::format("holds {}, not integers", info->type_name));
      ok = false;
    }
    if (info->dims != 1) {
      Add(name, fmt::format("has {} dimensions; it must be 1-D", info->dims));
      ok = false;
    }
    return ok ? info : std::nullopt;
  }

 private:
  std::optional<int64_t> ReadPresentInt(const h5::File& file, const std::string& name) {
    try {
      return file.ReadIntAttribute(name);
    } catch (const DataError& e) {  // not one integer, or above 2^63 - 1: says which
      Add(name, WithoutPathPrefix(e.what(), file.path()));
    } catch (const Hdf5Error& e) {  // a genuine read failure: HDF5's own words
      Add(name, "cannot be read: " + WithoutPathPrefix(e.what(), file.path()));
    }
    return std::nullopt;
  }

  std::string rel_;
  ShardCheck* out_;
};

// A shard open for its checks: HDF5's handle for the metadata, a descriptor for plain reads.
struct OpenShard {
  const h5::File& file;
  int fd;
};

ArrayLocation LocationOf(const h5::ArrayInfo& info) {
  ArrayLocation at;
  at.direct = info.contiguous && info.little_endian && info.file_offset.has_value();
  at.byte_offset = info.file_offset.value_or(0);
  return at;
}

// Entry `index` of /doc_offsets as int64 (a uint64 array gives the same bits), or nullopt after
// reporting that the file ends inside the array.
std::optional<int64_t> ReadOffset(const OpenShard& shard, const ArrayLocation& at, uint64_t index,
                                  ShardChecker* checker) {
  int64_t value = 0;
  if (!at.direct || std::endian::native != std::endian::little) {
    shard.file.ReadRaw("/doc_offsets", index, 1, &value);
    return value;
  }
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const bool addressable = index <= (kMax - at.byte_offset) / 8;
  const uint64_t byte = addressable ? at.byte_offset + index * 8 : kMax;
  if (addressable && ReadUpTo(shard.fd, byte, 8, &value, shard.file.path()) == 8) return value;
  checker->Add("/doc_offsets",
               fmt::format("the file ends before this entry (at byte {}): it is truncated", byte),
               index);
  return std::nullopt;
}

// Describes /tokens into `s`; nullopt when it is missing or not 1-D integers.
std::optional<h5::ArrayInfo> DescribeTokens(const h5::File& file, ShardChecker* checker,
                                            ShardInfo* s) {
  auto tokens = checker->DescribeArray(file, "/tokens");
  if (!tokens) return std::nullopt;
  s->tokens = tokens->length;
  checker->arrays().tokens = LocationOf(*tokens);
  // HDF5 allows integers of any size (e.g. 3 bytes); the format allows 1, 2, 4 or 8.
  const auto type = TokenTypeFrom(tokens->element_size, tokens->is_signed);
  if (type) {
    s->token_type = *type;
  } else {
    checker->Add("/tokens", fmt::format("holds {}-byte integers; token ids must be 1, 2, 4 "
                                        "or 8 bytes wide",
                                        tokens->element_size));
  }
  return tokens;
}

// Describes /doc_offsets into `s` and checks that it starts at 0 and ends at the length of
// /tokens (`tokens`, nullopt when /tokens is unusable). False when the shard is unusable.
bool DescribeOffsets(const OpenShard& shard, const std::optional<h5::ArrayInfo>& tokens,
                     ShardChecker* checker, ShardInfo* s) {
  const auto offsets = checker->DescribeArray(shard.file, "/doc_offsets");
  if (!offsets) return false;
  if (offsets->element_size != 8) {
    checker->Add("/doc_offsets",
                 fmt::format("holds {}; it must be uint64 or int64", offsets->type_name));
    return true;  // reported; the problem alone keeps the shard out of the table
  }
  if (offsets->length == 0) {
    checker->Add("/doc_offsets", "is empty; it needs one entry more than there are documents");
    return true;
  }
  s->docs = offsets->length - 1;
  s->offsets_signed = offsets->is_signed;
  const ArrayLocation& at = checker->arrays().offsets = LocationOf(*offsets);
  const auto first = ReadOffset(shard, at, 0, checker);
  const auto last = ReadOffset(shard, at, s->docs, checker);
  if (!first || !last) return false;
  if (*first != 0) checker->Add("/doc_offsets", fmt::format("starts at {}, not 0", *first), 0);
  if (tokens && static_cast<uint64_t>(*last) != tokens->length) {
    checker->Add("/doc_offsets",
                 fmt::format("ends at {}, but /tokens holds {} tokens", *last, tokens->length),
                 s->docs);
  }
  return tokens && *first == 0 && static_cast<uint64_t>(*last) == tokens->length;
}

// Reads the optional attributes into `s`. False when one makes the shard unusable.
bool DescribeAttributes(const h5::File& file, ShardChecker* checker, ShardInfo* s) {
  bool ok = true;
  ShardVocabulary v;
  v.vocab_size = checker->ReadInt(file, "vocab_size");
  v.eos_id = checker->ReadInt(file, "eos_id");
  v.bos_id = checker->ReadInt(file, "bos_id");
  if (v.vocab_size && *v.vocab_size <= 0) {
    checker->Add("vocab_size", fmt::format("is {}; it must be positive", *v.vocab_size));
    ok = false;
  }
  v.tokenizer = checker->ReadString(file, "tokenizer");
  s->vocabulary = std::make_shared<const ShardVocabulary>(std::move(v));
  if (const auto text = checker->ReadString(file, kChecksumAttribute)) {
    s->checksum = ParseChecksum(*text);
    if (!s->checksum) {
      checker->Add(kChecksumAttribute,
                   fmt::format("is \"{}\", not xxh3-64: and 16 lowercase hex digits", *text));
      ok = false;
    }
  }
  return ok;
}

// Runs every check on an open shard, in the order of its problems. False when it is unusable.
bool DescribeOpenShard(const OpenShard& shard, ShardChecker* checker, ShardInfo* s) {
  const bool version_ok = checker->CheckVersion(shard.file);
  const auto tokens = DescribeTokens(shard.file, checker, s);
  const bool offsets_ok = DescribeOffsets(shard, tokens, checker, s);
  const bool attributes_ok = DescribeAttributes(shard.file, checker, s);
  return version_ok && offsets_ok && attributes_ok;
}

// The problem an HDF5 error on a shard describes, without the file's path (the problem names it).
// A cut-short file is the common case: HDF5 reports "truncated file: eof = 20000,
// sblock->base_addr = 0, stored_eof = 137174"; say that in words.
std::string OpenFailure(const std::string& what, const std::string& path, uint64_t size) {
  const std::string detail = WithoutPathPrefix(what, path);
  if (detail.find("truncated") == std::string::npos) return detail;
  constexpr std::string_view kStoredEof = "stored_eof = ";
  const size_t at = detail.find(kStoredEof);
  uint64_t expected = 0;
  const char* end = detail.data() + detail.size();
  if (at != std::string::npos &&
      std::from_chars(detail.data() + at + kStoredEof.size(), end, expected).ec == std::errc()) {
    return fmt::format("file is truncated: it holds {} bytes, but its HDF5 superblock says {}",
                       size, expected);
  }
  return fmt::format("file is truncated ({} bytes; {})", size, detail);
}

// Opens the shard with HDF5 and checks it. False when it is unusable. The signature is looked
// for only when the open failed (HDF5 looks for it the same way), to tell a file that is not
// HDF5 at all from a damaged one.
bool DescribeHdf5(const std::string& path, int fd, ShardChecker* checker, ShardInfo* s) {
  try {
    const h5::File file = h5::File::OpenReadOnly(path);
    return DescribeOpenShard({file, fd}, checker, s);
  } catch (const Hdf5Error& e) {
    checker->Add("", HasHdf5Signature(fd, s->file_bytes, path)
                         ? OpenFailure(e.what(), path, s->file_bytes)
                         : "not an HDF5 file");
    return false;
  }
}

}  // namespace

ArrayLocations LocateArrays(const h5::File& file) {
  return {LocationOf(file.Describe("/tokens")), LocationOf(file.Describe("/doc_offsets"))};
}

ShardCheck DescribeShard(const std::string& root, const std::string& rel_path, uint32_t dataset) {
  ShardCheck check;
  ShardChecker checker(rel_path, &check);
  const std::string path = root + "/" + rel_path;
  try {
    const Fd fd(posix::Open(path, O_RDONLY | O_CLOEXEC));
    STOKER_CHECK(fd, IoError, "cannot open: {}", std::strerror(errno));
    struct stat st {};
    STOKER_CHECK(posix::Fstat(fd.get(), &st, path) == 0, IoError, "cannot stat: {}",
                 std::strerror(errno));
    if (st.st_size == 0) {
      checker.Add("", "not an HDF5 file (it is empty: 0 bytes)");
      return check;
    }
    ShardInfo s{
        .path = rel_path, .dataset = dataset, .file_bytes = static_cast<uint64_t>(st.st_size)};
    const bool ok = DescribeHdf5(path, fd.get(), &checker, &s);
    if (ok && check.problems.empty()) check.info = std::move(s);
  } catch (const IoError& e) {
    checker.Add("", e.what());
  }
  return check;
}

}  // namespace stoker
