#include "checkpoint/corpus_record_file.h"

#include <filesystem>

#include "base/check.h"
#include "checkpoint/checkpoint_store.h"
#include "os/files.h"
#include "state/corpus_diff.h"

namespace stoker {

namespace {

RecordedShardView ViewOf(const ShardInfo& s) {
  return {.path = s.path,
          .file_bytes = s.file_bytes,
          .docs = s.docs,
          .tokens = s.tokens,
          .token_type = s.token_type,
          .checksum = s.checksum};
}

}  // namespace

CorpusRecord RecordOf(const CorpusTable& table) {
  CorpusRecord record{.fingerprint = table.fingerprint};
  record.shards.reserve(table.shards.size());
  for (const ShardInfo& shard : table.shards) {
    const RecordedShardView s = ViewOf(shard);
    record.shards.push_back({.path = std::string(s.path),
                             .file_bytes = s.file_bytes,
                             .docs = s.docs,
                             .tokens = s.tokens,
                             .token_type = s.token_type,
                             .checksum = s.checksum});
  }
  return record;
}

std::string EncodedRecordOf(const CorpusTable& table) {
  return EncodeCorpusRecord(table.fingerprint, table.shards.size(),
                            [&](uint64_t i) { return ViewOf(table.shards[i]); });
}

std::optional<CorpusRecord> ReadCorpusRecord(const std::string& step_dir, std::string* bytes) {
  const std::string path = CorpusRecordPath(step_dir);
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return std::nullopt;
  std::string read = ReadFile(path);
  CorpusRecord record = DecodeCorpusRecord(read, path);
  if (bytes != nullptr) *bytes = std::move(read);
  return record;
}

CorpusRecordCheck CheckCorpusRecord(const std::string& step_dir, const std::string& fingerprint) {
  CorpusRecordCheck check;
  try {
    check.record = ReadCorpusRecord(step_dir);
  } catch (const std::exception& e) {
    check.problem = e.what();
    return check;
  }
  if (check.record && !fingerprint.empty() && check.record->fingerprint != fingerprint) {
    check.problem =
        fmt::format("{} records a corpus of fingerprint {}, not the {} of its rank files",
                    CorpusRecordPath(step_dir), check.record->fingerprint, fingerprint);
    check.record.reset();
  }
  return check;
}

std::string CorpusChangeNote(const std::string& step_dir, const std::string& saved_fingerprint,
                             const CorpusTable& now) {
  const CorpusRecordCheck check = CheckCorpusRecord(step_dir, saved_fingerprint);
  if (check.record) return DescribeCorpusDiff(DiffCorpus(*check.record, RecordOf(now)));
  const std::string unknown = "so which files differ is not known";
  if (!check.problem.empty()) return fmt::format("{}, {}", check.problem, unknown);
  return fmt::format("checkpoint {} predates the corpus record (it has no {}), {}", step_dir,
                     CorpusRecordPath(step_dir), unknown);
}

}  // namespace stoker
