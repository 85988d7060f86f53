#include "tools/pack_sink.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "base/check.h"
#include "shard/part_path.h"
#include "tokens/byte_tokenizer.h"
#include "tokens/token_type.h"

namespace stoker {

namespace {

constexpr uint64_t kWriteBlock = uint64_t{1} << 20;     // tokens handed to the writer at a time
constexpr uint64_t kReserveTokens = uint64_t{1} << 26;  // the most a sink reserves up front

}  // namespace

const char* KindName(DocKind kind) {
  return kind == DocKind::kBytes ? "text (byte-tokenized)" : "token-id arrays";
}

void TokenBuffer::Append(std::span<const uint64_t> tokens) {
  for (uint64_t t : tokens) max_ = std::max(max_, t);
  if (!wide_ && max_ > std::numeric_limits<uint32_t>::max()) {
    wide_ = true;
    wide_tokens_.assign(narrow_.begin(), narrow_.end());
    narrow_ = {};
  }
  if (wide_) return (void)wide_tokens_.insert(wide_tokens_.end(), tokens.begin(), tokens.end());
  narrow_.insert(narrow_.end(), tokens.begin(), tokens.end());  // every id fits: narrows
}

void TokenBuffer::WriteTo(ShardWriter* writer) const {
  if (wide_) return writer->Append(wide_tokens_);
  std::vector<uint64_t> block;
  for (size_t at = 0; at < narrow_.size(); at += kWriteBlock) {
    block.assign(narrow_.begin() + at,
                 narrow_.begin() + std::min(narrow_.size(), at + kWriteBlock));
    writer->Append(block);
  }
}

void TokenBuffer::Clear() {
  narrow_.clear();
  wide_tokens_.clear();
  max_ = 0;
}

ShardSink::ShardSink(const PackSpec& spec, int rank)
    : spec_(spec), rank_(rank), tokens_(std::min(spec.shard_tokens, kReserveTokens)) {
  CheckPartRank(rank, "pack");
}

void ShardSink::StartDoc(DocKind kind, uint64_t length, const std::string& where) {
  CheckKind(kind, where);
  if (!offsets_.empty() && tokens_.size() + length > spec_.shard_tokens) Flush();
  const bool type_known = kind == DocKind::kBytes || spec_.vocab_size.has_value();
  if (length > spec_.shard_tokens && type_known) {
    const uint64_t offsets[] = {0, length};
    direct_ = std::make_unique<ShardWriter>(NextPath(), TypeFor(0), offsets, Attributes());
  }
}

void ShardSink::Append(std::span<const uint64_t> tokens) {
  tokens_appended_ += tokens.size();
  if (direct_) return direct_->Append(tokens);
  tokens_.Append(tokens);
}

void ShardSink::EndDoc() {
  ++docs_;
  if (direct_) {
    direct_->Finish();
    direct_.reset();
    return;
  }
  if (offsets_.empty()) offsets_.push_back(0);
  offsets_.push_back(tokens_.size());
  if (tokens_.size() >= spec_.shard_tokens) Flush();
}

void ShardSink::Flush() {
  if (offsets_.empty()) return;
  ShardWriter writer(NextPath(), TypeFor(tokens_.max()), offsets_, Attributes());
  tokens_.WriteTo(&writer);
  writer.Finish();
  offsets_.clear();
  tokens_.Clear();
}

void ShardSink::RemoveWritten() {
  direct_.reset();
  std::error_code ec;
  for (const auto& path : written_) std::filesystem::remove(path, ec);
}

void ShardSink::CheckKind(DocKind kind, const std::string& where) {
  STOKER_CHECK(kind != DocKind::kBytes || !spec_.vocab_size, DataError,
               "{}: --vocab-size applies to token-id arrays, but this document is {}", where,
               KindName(kind));
  if (kind_ == DocKind::kNone) {
    kind_ = kind;
    first_doc_ = where;
  }
  STOKER_CHECK(kind == kind_, DataError,
               "{}: document is {}, but {} was {}; one pack run takes one or the other", where,
               KindName(kind), first_doc_, KindName(kind_));
}

std::string ShardSink::NextPath() {
  written_.push_back(PartPath(spec_.out, rank_, written_.size(), spec_.shard_tokens));
  return written_.back();
}

TokenType ShardSink::TypeFor(uint64_t max_id) const {
  if (kind_ == DocKind::kBytes) return TokenTypeForVocab(kByteTokenizerVocab);
  return TokenTypeForVocab(spec_.vocab_size.value_or(max_id + 1));
}

ShardAttributes ShardSink::Attributes() const {
  ShardAttributes a;
  if (kind_ == DocKind::kBytes) {
    a = {kByteTokenizerVocab, kByteTokenizerEos, kByteTokenizerBos, kByteTokenizerName};
  } else if (spec_.vocab_size) {
    a.vocab_size = static_cast<int64_t>(*spec_.vocab_size);
  }
  return a;
}

}  // namespace stoker
