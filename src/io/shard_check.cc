// DescribeShard: the metadata checks of one shard (see io/discovery.h).
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>

#include "base/check.h"
#include "core/token_type.h"
#include "h5/h5.h"
#include "io/discovery.h"

namespace stoker {

namespace {

constexpr int64_t kFormatVersion = 1;

class ShardChecker {
 public:
  ShardChecker(const std::string& rel_path, ShardCheck* out) : rel_(rel_path), out_(out) {}

  void Add(std::string object, std::string message, std::optional<uint64_t> index = {}) {
    out_->problems.push_back({rel_, std::move(object), index, std::move(message)});
  }

  // Checks the format version attribute. False when the file cannot be read further.
  bool CheckVersion(const h5::File& file) {
    if (!file.HasAttribute("stoker_format_version")) {
      Add("stoker_format_version", "missing format version attribute (this stoker reads 1)");
      return false;
    }
    const auto version = ReadInt(file, "stoker_format_version");
    if (!version) return false;
    if (*version != kFormatVersion) {
      Add("stoker_format_version",
          fmt::format("unsupported format version {} (this stoker reads 1)", *version));
      return false;
    }
    return true;
  }

  std::optional<int64_t> ReadInt(const h5::File& file, const std::string& name) {
    if (!file.HasAttribute(name)) return std::nullopt;
    try {
      return file.ReadIntAttribute(name);
    } catch (const Hdf5Error&) {
      Add(name, "attribute is not an integer scalar");
      return std::nullopt;
    }
  }

  // The description of a 1-D integer dataset, or nullopt after reporting why not.
  std::optional<h5::DatasetInfo> DescribeArray(const h5::File& file, const std::string& name) {
    if (!file.HasDataset(name)) {
      Add(name, "missing dataset");
      return std::nullopt;
    }
    h5::DatasetInfo info = file.Describe(name);
    bool ok = true;
    if (!info.is_integer) {
      Add(name, fmt::format("holds {}, not integers", info.type_name));
      ok = false;
    }
    if (info.dims != 1) {
      Add(name, fmt::format("has {} dimensions; it must be 1-D", info.dims));
      ok = false;
    }
    return ok ? std::optional(info) : std::nullopt;
  }

 private:
  std::string rel_;
  ShardCheck* out_;
};

ArrayLocation LocationOf(const h5::DatasetInfo& info) {
  ArrayLocation at;
  at.direct = info.contiguous && info.little_endian && info.file_offset.has_value();
  at.byte_offset = info.file_offset.value_or(0);
  return at;
}

void DescribeOpenShard(const h5::File& file, ShardChecker* checker, ShardInfo* s, bool* ok) {
  *ok = checker->CheckVersion(file);
  const auto tokens = checker->DescribeArray(file, "/tokens");
  const auto offsets = checker->DescribeArray(file, "/doc_offsets");
  if (tokens) {
    s->tokens = tokens->length;
    s->tokens_at = LocationOf(*tokens);
    // HDF5 allows integers of any size (e.g. 3 bytes); the format allows 1, 2, 4 or 8.
    const auto type = TokenTypeFrom(tokens->element_size, tokens->is_signed);
    if (type) {
      s->token_type = *type;
    } else {
      checker->Add("/tokens", fmt::format("holds {}-byte integers; token ids must be 1, 2, 4 "
                                          "or 8 bytes wide",
                                          tokens->element_size));
    }
  }
  if (offsets && offsets->element_size != 8) {
    checker->Add("/doc_offsets", fmt::format("holds {}; it must be uint64 or int64",
                                             offsets->type_name));
  } else if (offsets && offsets->length == 0) {
    checker->Add("/doc_offsets", "is empty; it needs one entry more than there are documents");
  } else if (offsets) {
    s->docs = offsets->length - 1;
    s->offsets_signed = offsets->is_signed;
    s->offsets_at = LocationOf(*offsets);
    int64_t first = 0, last = 0;
    file.ReadRaw("/doc_offsets", 0, 1, &first);
    file.ReadRaw("/doc_offsets", s->docs, 1, &last);
    if (first != 0) checker->Add("/doc_offsets", fmt::format("starts at {}, not 0", first), 0);
    if (tokens && static_cast<uint64_t>(last) != tokens->length) {
      checker->Add("/doc_offsets",
                   fmt::format("ends at {}, but /tokens holds {} tokens", last, tokens->length),
                   s->docs);
    }
    *ok = *ok && tokens && first == 0 && static_cast<uint64_t>(last) == tokens->length;
  } else {
    *ok = false;
  }
  s->vocab_size = checker->ReadInt(file, "vocab_size");
  s->eos_id = checker->ReadInt(file, "eos_id");
  s->bos_id = checker->ReadInt(file, "bos_id");
  if (s->vocab_size && *s->vocab_size <= 0) {
    checker->Add("vocab_size", fmt::format("is {}; it must be positive", *s->vocab_size));
    *ok = false;
  }
  if (file.HasAttribute("tokenizer")) {
    try {
      s->tokenizer = file.ReadStringAttribute("tokenizer");
    } catch (const Hdf5Error&) {
      checker->Add("tokenizer", "attribute is not a string");
    }
  }
}

// The problem an HDF5 error on a shard describes, without the file's path (the problem names it).
// A cut-short file is the common case: HDF5 reports "truncated file: eof = 20000,
// sblock->base_addr = 0, stored_eof = 137174"; say that in words.
std::string OpenFailure(const std::string& what, const std::string& path, uint64_t size) {
  const std::string prefix = path + ": ";
  const std::string detail = what.starts_with(prefix) ? what.substr(prefix.size()) : what;
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

}  // namespace

ShardCheck DescribeShard(const std::string& root, const std::string& rel_path, uint32_t dataset) {
  ShardCheck check;
  ShardChecker checker(rel_path, &check);
  const std::string path = root + "/" + rel_path;
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) {
    checker.Add("", fmt::format("cannot stat: {}", std::strerror(errno)));
    return check;
  }
  if (st.st_size == 0) {
    checker.Add("", "not an HDF5 file (it is empty: 0 bytes)");
    return check;
  }
  if (!h5::IsHdf5(path)) {
    checker.Add("", "not an HDF5 file");
    return check;
  }
  ShardInfo s{.path = rel_path, .dataset = dataset, .file_bytes = static_cast<uint64_t>(st.st_size)};
  bool ok = false;
  try {
    const h5::File file = h5::File::OpenReadOnly(path);
    DescribeOpenShard(file, &checker, &s, &ok);
  } catch (const Hdf5Error& e) {
    checker.Add("", OpenFailure(e.what(), path, static_cast<uint64_t>(st.st_size)));
    ok = false;
  }
  if (ok && check.problems.empty()) check.info = std::move(s);
  return check;
}

}  // namespace stoker
