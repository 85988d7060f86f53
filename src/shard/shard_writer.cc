#include "shard/shard_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <vector>

#include "base/check.h"
#include "os/files.h"
#include "tokens/token_type.h"

namespace stoker {

namespace {

template <typename T>
void Narrow(std::span<const uint64_t> tokens, uint64_t first_index, const std::string& path,
            std::vector<char>* out) {
  out->resize(tokens.size() * sizeof(T));
  T* dst = reinterpret_cast<T*>(out->data());
  constexpr uint64_t kMax =
      std::min<uint64_t>(std::numeric_limits<T>::max(), std::numeric_limits<int64_t>::max());
  for (size_t i = 0; i < tokens.size(); ++i) {
    STOKER_CHECK(tokens[i] <= kMax, DataError,
                 "{}: token {} at /tokens[{}] does not fit in the shard's {}-bit{} token type "
                 "(largest id {})",
                 path, tokens[i], first_index + i, sizeof(T) * 8,
                 std::numeric_limits<T>::is_signed ? " signed" : "", kMax);
    dst[i] = static_cast<T>(tokens[i]);
  }
}

h5::IntType IntTypeOf(TokenType type) { return {TokenTypeSize(type), TokenTypeSigned(type)}; }

// Writes the attributes and /doc_offsets, and creates /tokens (filled by Append).
void WriteHeader(h5::File* file, TokenType type, std::span<const uint64_t> doc_offsets,
                 const ShardAttributes& attributes) {
  file->WriteIntAttribute("stoker_format_version", 1);
  if (attributes.vocab_size) file->WriteIntAttribute("vocab_size", *attributes.vocab_size);
  if (attributes.eos_id) file->WriteIntAttribute("eos_id", *attributes.eos_id);
  if (attributes.bos_id) file->WriteIntAttribute("bos_id", *attributes.bos_id);
  if (attributes.tokenizer) file->WriteStringAttribute("tokenizer", *attributes.tokenizer);
  if (attributes.source) file->WriteStringAttribute("source", *attributes.source);
  const h5::IntType offset_type{8, false};
  file->CreateIntDataset("/doc_offsets", offset_type, doc_offsets.size());
  file->WriteRaw("/doc_offsets", offset_type, 0, doc_offsets.size(), doc_offsets.data());
  file->CreateIntDataset("/tokens", IntTypeOf(type), doc_offsets.back());
}

}  // namespace

ShardWriter::ShardWriter(std::string path, TokenType type, std::span<const uint64_t> doc_offsets,
                         const ShardAttributes& attributes)
    : path_(std::move(path)), temp_path_(path_ + ".tmp"), type_(type) {
  STOKER_ASSERT(!doc_offsets.empty() && doc_offsets.front() == 0, "{}: offsets must start at 0",
                path_);
  for (size_t i = 1; i < doc_offsets.size(); ++i) {
    STOKER_ASSERT(doc_offsets[i] >= doc_offsets[i - 1], "{}: offsets decrease at {}", path_, i);
  }
  total_ = doc_offsets.back();
  // A bare file name has no parent to create (and create_directories("") fails).
  const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  STOKER_CHECK(!ec, IoError, "cannot create the folder {} for shard {}: {}", parent.string(), path_,
               ec.message());
  try {
    file_.emplace(h5::File::Create(temp_path_));
    WriteHeader(&*file_, type_, doc_offsets, attributes);
    checksum_.AddOffsets(doc_offsets);
  } catch (...) {  // the destructor does not run for a constructor that throws
    file_.reset();
    std::remove(temp_path_.c_str());
    throw;
  }
}

ShardWriter::~ShardWriter() {
  if (!file_) return;
  file_.reset();  // an unfinished shard never reaches its real name
  std::remove(temp_path_.c_str());
}

void ShardWriter::Append(std::span<const uint64_t> tokens) {
  STOKER_ASSERT(file_.has_value(), "{}: append after Finish", path_);
  STOKER_ASSERT(written_ + tokens.size() <= total_, "{}: {} tokens beyond the declared {}", path_,
                written_ + tokens.size(), total_);
  std::vector<char> narrowed;
  VisitTokenType(type_,
                 [&](auto zero) { Narrow<decltype(zero)>(tokens, written_, path_, &narrowed); });
  file_->WriteRaw("/tokens", IntTypeOf(type_), written_, tokens.size(), narrowed.data());
  checksum_.AddTokenBytes(std::as_bytes(std::span<const char>(narrowed)));
  written_ += tokens.size();
}

void ShardWriter::AppendRaw(std::span<const std::byte> raw) {
  const auto size = static_cast<uint64_t>(TokenTypeSize(type_));
  const uint64_t count = raw.size() / size;
  STOKER_ASSERT(file_.has_value(), "{}: append after Finish", path_);
  STOKER_ASSERT(raw.size() % size == 0, "{}: {} bytes are not whole tokens", path_, raw.size());
  STOKER_ASSERT(written_ + count <= total_, "{}: {} tokens beyond the declared {}", path_,
                written_ + count, total_);
  file_->WriteRaw("/tokens", IntTypeOf(type_), written_, count, raw.data());
  checksum_.AddTokenBytes(raw);
  written_ += count;
}

void ShardWriter::Finish() {
  STOKER_ASSERT(file_.has_value(), "{}: Finish twice", path_);
  STOKER_ASSERT(written_ == total_, "{}: {} of {} tokens written", path_, written_, total_);
  try {
    file_->WriteStringAttribute(kChecksumAttribute, ChecksumText(checksum_.Value()));
    file_->Close();
    file_.reset();
    // The data reaches the disk before the name does, and the name before Finish returns: after
    // a crash the shard is there whole, or not at all.
    SyncPath(temp_path_, /*folder=*/false);
  } catch (...) {
    file_.reset();
    std::remove(temp_path_.c_str());
    throw;
  }
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    std::remove(temp_path_.c_str());
    throw IoError(
        fmt::format("cannot rename {} to {}: {}", temp_path_, path_, std::strerror(error)));
  }
  const std::string parent = std::filesystem::path(path_).parent_path().string();
  SyncPath(parent.empty() ? "." : parent, /*folder=*/true);
}

void WriteShard(const std::string& path, TokenType type, std::span<const uint64_t> doc_offsets,
                std::span<const uint64_t> tokens, const ShardAttributes& attributes) {
  ShardWriter writer(path, type, doc_offsets, attributes);
  writer.Append(tokens);
  writer.Finish();
}

}  // namespace stoker
