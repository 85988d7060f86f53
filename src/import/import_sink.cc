#include "import/import_sink.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/check.h"
#include "shard/part_path.h"
#include "tokens/token_type.h"

namespace stoker {

namespace {

constexpr uint64_t kWriteBlock = uint64_t{1} << 20;     // tokens converted at a time (--narrow)
constexpr uint64_t kReserveTokens = uint64_t{1} << 26;  // the most a sink reserves up front

// Adds [from, to) of `source` to `ranges`, joining it to the last range of the same source.
void AddRange(std::vector<ImportSink::SourceRange>* ranges, size_t source, uint64_t from,
              uint64_t to) {
  if (!ranges->empty() && ranges->back().source == source && ranges->back().to == from) {
    ranges->back().to = to;
    return;
  }
  ranges->push_back({source, from, to});
}

// Writes `raw` (tokens of `from`) to `writer`, whose type may be narrower: widened and narrowed
// again in blocks (ShardWriter::Append checks each id fits).
void WriteConverted(std::span<const std::byte> raw, TokenType from, ShardWriter* writer) {
  const auto size = static_cast<uint64_t>(TokenTypeSize(from));
  const uint64_t count = raw.size() / size;
  std::vector<int64_t> ids;
  for (uint64_t at = 0; at < count; at += kWriteBlock) {
    const uint64_t n = std::min(kWriteBlock, count - at);
    ids.resize(n);
    WidenTokens(from, raw.data() + at * size, n, ids.data());
    // Checked ids are never negative: as uint64 they are the same values.
    writer->Append({reinterpret_cast<const uint64_t*>(ids.data()), n});
  }
}

}  // namespace

ImportSink::ImportSink(SinkSettings settings, TokenType type, std::vector<SourceFile> sources)
    : settings_(std::move(settings)),
      type_(type),
      size_(TokenTypeSize(type)),
      sources_(std::move(sources)) {
  CheckPartRank(settings_.rank, "import");
  gathered_.reserve(std::min(settings_.shard_tokens, kReserveTokens) * size_);
}

ImportSink::~ImportSink() = default;

void ImportSink::StartDoc(uint64_t length, size_t source, uint64_t position,
                          uint64_t end_position) {
  const uint64_t gathered = gathered_.size() / size_;
  if (!offsets_.empty() && gathered + length > settings_.shard_tokens) Flush();
  if (length <= settings_.shard_tokens) {
    if (offsets_.empty()) offsets_.push_back(0);
    AddRange(&ranges_, source, position, end_position);
    return;
  }
  // Longer than a shard: streamed into a shard of its own, after the gathered ones.
  Flush();
  const uint64_t offsets[] = {0, length};
  direct_type_ = settings_.narrow && settings_.vocab_size ? NarrowType(0) : type_;
  direct_ = std::make_unique<ShardWriter>(NextPath(), direct_type_, offsets,
                                          Attributes({{source, position, end_position}}));
  Note(direct_type_);
}

void ImportSink::Append(std::span<const std::byte> raw, int64_t max_id) {
  tokens_ += raw.size() / size_;
  if (direct_ && direct_type_ == type_) return direct_->AppendRaw(raw);
  if (direct_) return WriteConverted(raw, type_, direct_.get());
  max_id_ = std::max(max_id_, max_id);
  gathered_.insert(gathered_.end(), raw.begin(), raw.end());
}

void ImportSink::EndDoc() {
  ++docs_;
  if (direct_) {
    direct_->Finish();
    direct_.reset();
    return;
  }
  offsets_.push_back(gathered_.size() / size_);
  if (offsets_.back() >= settings_.shard_tokens) Flush();
}

void ImportSink::Flush() {
  if (offsets_.size() < 2) return;
  const TokenType type = settings_.narrow ? NarrowType(max_id_) : type_;
  ShardWriter writer(NextPath(), type, offsets_, Attributes(ranges_));
  if (type == type_) {
    writer.AppendRaw(gathered_);
  } else {
    WriteConverted(gathered_, type_, &writer);
  }
  writer.Finish();
  Note(type);
  gathered_.clear();
  offsets_.clear();
  ranges_.clear();
  max_id_ = 0;
}

std::string ImportSink::NextPath() {
  return PartPath(settings_.folder, settings_.rank, shards_++, settings_.shard_tokens);
}

TokenType ImportSink::NarrowType(int64_t max_id) const {
  const TokenType type =
      TokenTypeForVocab(settings_.vocab_size.value_or(static_cast<uint64_t>(max_id) + 1));
  return TokenTypeSize(type) <= size_ ? type : type_;  // never wider than the input's
}

ShardAttributes ImportSink::Attributes(const std::vector<SourceRange>& ranges) const {
  ShardAttributes a;
  if (settings_.vocab_size) a.vocab_size = static_cast<int64_t>(*settings_.vocab_size);
  if (settings_.eos_id) a.eos_id = static_cast<int64_t>(*settings_.eos_id);
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
  for (const SourceRange& r : ranges) {
    const SourceFile& file = sources_.at(r.source);
    inputs.push_back({{"path", file.path}, {"bytes", file.bytes}, {"from", r.from}, {"to", r.to}});
  }
  const nlohmann::ordered_json source = {
      {"format", settings_.format}, {"positions", settings_.unit}, {"inputs", inputs}};
  a.source = source.dump();
  return a;
}

void ImportSink::Note(TokenType type) {
  if (std::find(types_.begin(), types_.end(), type) == types_.end()) types_.push_back(type);
}

}  // namespace stoker
