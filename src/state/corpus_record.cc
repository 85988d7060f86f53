#include "state/corpus_record.h"

#include <algorithm>

#include "base/check.h"
#include "state/field_codec.h"
#include "tokens/token_type.h"

namespace stoker {

namespace {

constexpr std::string_view kCorpusRecordMagic = "STOKERCT";
constexpr const char* kCorpusRecordKind = "stoker corpus record";

uint64_t TypeCode(TokenType type) {
  return 2 * static_cast<uint64_t>(TokenTypeSize(type)) + (TokenTypeSigned(type) ? 1 : 0);
}

size_t SharedPrefix(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

RecordedShard GetShard(FieldReader* r, std::string_view previous_path, uint32_t version) {
  RecordedShard s;
  const uint64_t shared = r->U();
  if (shared > previous_path.size()) r->Fail("a path shares more than the previous path holds");
  s.path = std::string(previous_path.substr(0, shared)) + r->Str();
  s.file_bytes = r->U();
  s.docs = r->U();
  s.tokens = r->U();
  const uint64_t code = r->U();
  const auto type =
      code < 32 ? TokenTypeFrom(static_cast<int>(code / 2), code % 2 == 1) : std::nullopt;
  if (!type) r->Fail(fmt::format("token type code {} of {}", code, s.path));
  s.token_type = *type;
  if (version < 2) return s;
  const uint64_t has_checksum = r->U();
  if (has_checksum > 1) r->Fail(fmt::format("checksum flag {} of {}", has_checksum, s.path));
  if (has_checksum == 1) s.checksum = r->U();
  return s;
}

}  // namespace

std::string EncodeCorpusRecord(std::string_view fingerprint, uint64_t shards,
                               const std::function<RecordedShardView(uint64_t)>& shard_at) {
  FieldWriter payload;
  payload.Str(fingerprint);
  payload.U(shards);
  std::string_view previous;
  for (uint64_t i = 0; i < shards; ++i) {
    const RecordedShardView s = shard_at(i);
    const size_t shared = SharedPrefix(previous, s.path);
    payload.U(shared);
    payload.Str(s.path.substr(shared));
    payload.U(s.file_bytes);
    payload.U(s.docs);
    payload.U(s.tokens);
    payload.U(TypeCode(s.token_type));
    payload.U(s.checksum.has_value());
    if (s.checksum) payload.U(*s.checksum);
    previous = s.path;
  }
  return FrameFile(kCorpusRecordMagic, kCorpusRecordFormatVersion, std::move(payload.bytes()));
}

std::string EncodeCorpusRecord(const CorpusRecord& record) {
  return EncodeCorpusRecord(record.fingerprint, record.shards.size(), [&](uint64_t i) {
    const RecordedShard& s = record.shards[i];
    return RecordedShardView{.path = s.path,
                             .file_bytes = s.file_bytes,
                             .docs = s.docs,
                             .tokens = s.tokens,
                             .token_type = s.token_type,
                             .checksum = s.checksum};
  });
}

CorpusRecord DecodeCorpusRecord(std::string_view bytes, const std::string& source) {
  uint32_t version = 0;
  FieldReader r = UnframeFile(bytes, kCorpusRecordMagic, 1, kCorpusRecordFormatVersion, source,
                              kCorpusRecordKind, &version);
  CorpusRecord record;
  record.fingerprint = r.Str();
  // Every shard takes at least 6 bytes (five varints and an empty string's length).
  record.shards.resize(r.Count(6));
  std::string_view previous;  // into the previous shard's path, which stays put
  for (RecordedShard& s : record.shards) {
    s = GetShard(&r, previous, version);
    previous = s.path;
  }
  if (!r.done()) r.Fail("bytes after the last shard");
  return record;
}

}  // namespace stoker
