#include "shard/verify.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>

#include "base/bytes.h"
#include "base/check.h"
#include "base/text_table.h"
#include "h5/h5.h"
#include "os/files.h"
#include "shard/discovery.h"
#include "shard/shard_reader.h"
#include "stoker/program/memory.h"
#include "tokens/content_checksum.h"
#include "tokens/token_type.h"

namespace stoker {

namespace {

// One kind of fault in one file: where it first showed, what it was, and how often it showed.
struct Finding {
  const char* object;  // "/tokens" or "/doc_offsets"
  const char* plural;  // for "(and 3 more <plural> in this file)"
  uint64_t count = 0;
  uint64_t index = 0;
  std::string first;

  template <typename Describe>
  void Note(uint64_t at, const Describe& describe) {
    if (count++ == 0) {
      index = at;
      first = describe();
    }
  }

  void Report(const std::string& file, std::vector<Problem>* out) const {
    if (count == 0) return;
    std::string message = first;
    if (count > 1) {
      message += fmt::format(" (and {} more {} in this file)", GroupThousands(count - 1), plural);
    }
    out->push_back({file, object, index, std::move(message)});
  }
};

// Readers widen ids to int64: an id of an 8-byte unsigned shard must stay below 2^63.
constexpr uint64_t kIdLimit = uint64_t{1} << 63;

// Streams one shard's arrays block by block and records what is wrong with them.
class ContentChecker {
 public:
  ContentChecker(const std::string& root, const ShardInfo& shard, const ArrayLocations& arrays,
                 uint64_t block)
      : reader_(root, shard, arrays), shard_(shard), block_(std::max<uint64_t>(block, 1)) {
    if (shard.vocabulary->vocab_size) {
      vocab_ = static_cast<uint64_t>(*shard.vocabulary->vocab_size);  // discovery: in [1, 2^63 - 1]
    } else if (shard.token_type == TokenType::kUint64) {
      id_limit_ = kIdLimit;
    }
  }

  void CheckOffsets() {
    uint64_t previous = 0;         // the last non-negative offset
    std::vector<uint64_t> hashed;  // hashed a few thousand at a time, not one by one
    ForEachOffset(reader_, block_, [&](uint64_t index, uint64_t offset) {
      CheckOffset(index, offset, &previous);
      hashed.push_back(offset);
      if (hashed.size() == 4096) {
        checksum_.AddOffsets(hashed);
        hashed.clear();
      }
    });
    checksum_.AddOffsets(hashed);
  }

  void CheckTokens() {
    std::vector<int64_t> ids(std::min(block_, shard_.tokens));
    std::vector<char> scratch;
    for (uint64_t start = 0; start < shard_.tokens; start += ids.size()) {
      const uint64_t count = std::min<uint64_t>(ids.size(), shard_.tokens - start);
      reader_.ReadTokens(start, count, ids.data(), &scratch);
      const std::span<const int64_t> block(ids.data(), count);
      CheckTokenBlock(start, block);
      checksum_.AddTokens(block, shard_.token_type);
    }
    read_whole_ = true;
  }

  // The content checksum of the arrays read, once both were read whole.
  std::optional<uint64_t> Checksum() const {
    return read_whole_ ? std::optional(checksum_.Value()) : std::nullopt;
  }

  void Report(std::vector<Problem>* out) const {
    for (const Finding* f : {&negative_offsets_, &offsets_beyond_end_, &decreasing_offsets_,
                             &negative_tokens_, &tokens_above_vocab_, &tokens_above_limit_}) {
      f->Report(shard_.path, out);
    }
  }

 private:
  void CheckOffset(uint64_t index, uint64_t bits, uint64_t* previous) {
    if (shard_.offsets_signed && static_cast<int64_t>(bits) < 0) {
      negative_offsets_.Note(
          index, [&] { return fmt::format("offset {} is negative", static_cast<int64_t>(bits)); });
      return;
    }
    if (bits > shard_.tokens) {
      offsets_beyond_end_.Note(index, [&] {
        return fmt::format("offset {} is beyond the end of /tokens ({} tokens)", bits,
                           shard_.tokens);
      });
    }
    if (bits < *previous) {
      decreasing_offsets_.Note(index, [&] {
        return fmt::format("offset {} is below the previous offset {}", bits, *previous);
      });
    }
    *previous = bits;
  }

  // Most blocks are clean: one pass for the extremes, a second one only to find the culprits.
  // Ids of an unsigned type arrive as their bits (a uint64 id of 2^63 or more looks negative).
  void CheckTokenBlock(uint64_t start, std::span<const int64_t> ids) {
    const bool is_signed = TokenTypeSigned(shard_.token_type);
    const std::optional<uint64_t> bound = vocab_ ? vocab_ : id_limit_;
    if (!is_signed && !bound) return;  // an unsigned id is never negative; no bound applies
    const uint64_t limit = bound.value_or(std::numeric_limits<uint64_t>::max());
    if (is_signed) {
      const auto [lo, hi] = std::minmax_element(ids.begin(), ids.end());
      if (lo == ids.end() || (*lo >= 0 && static_cast<uint64_t>(*hi) < limit)) return;
    } else {
      uint64_t hi = 0;
      for (const int64_t id : ids) hi = std::max(hi, static_cast<uint64_t>(id));
      if (hi < limit) return;
    }
    for (size_t i = 0; i < ids.size(); ++i) NoteId(start + i, ids[i], is_signed, limit);
  }

  void NoteId(uint64_t index, int64_t id, bool is_signed, uint64_t limit) {
    const auto bits = static_cast<uint64_t>(id);
    if (is_signed && id < 0) {
      negative_tokens_.Note(index, [&] { return fmt::format("token id {} is negative", id); });
    } else if (bits >= limit && vocab_) {
      tokens_above_vocab_.Note(index, [&] {
        return fmt::format("token id {} is at or above vocab_size {}", bits, limit);
      });
    } else if (bits >= limit) {
      tokens_above_limit_.Note(index, [&] {
        return fmt::format(
            "token id {} is above 2^63 - 1, the largest id stoker reads (ids are widened to "
            "int64)",
            bits);
      });
    }
  }

  ShardReader reader_;
  const ShardInfo& shard_;
  uint64_t block_;
  ContentChecksum checksum_;
  bool read_whole_ = false;
  std::optional<uint64_t> vocab_;
  std::optional<uint64_t> id_limit_;  // without vocab_size: 2^63 for uint64 tokens
  Finding negative_offsets_{"/doc_offsets", "negative offsets"};
  Finding offsets_beyond_end_{"/doc_offsets", "offsets beyond the end of /tokens"};
  Finding decreasing_offsets_{"/doc_offsets", "decreasing offsets"};
  Finding negative_tokens_{"/tokens", "negative token ids"};
  Finding tokens_above_vocab_{"/tokens", "token ids at or above vocab_size"};
  Finding tokens_above_limit_{"/tokens", "token ids above 2^63 - 1"};
};

void CheckSpecialIds(const ShardInfo& shard, std::vector<Problem>* out) {
  const ShardVocabulary& v = *shard.vocabulary;
  const std::pair<const char*, std::optional<int64_t>> ids[] = {{"eos_id", v.eos_id},
                                                                {"bos_id", v.bos_id}};
  for (const auto& [name, id] : ids) {
    if (!id) continue;
    if (*id < 0) {
      out->push_back({shard.path, name, std::nullopt,
                      fmt::format("is {}; token ids are never negative", *id)});
    } else if (v.vocab_size && *id >= *v.vocab_size) {
      out->push_back({shard.path, name, std::nullopt,
                      fmt::format("is {}, outside [0, vocab_size) = [0, {})", *id, *v.vocab_size)});
    }
  }
}

std::string_view DatasetOf(std::string_view file) { return file.substr(0, file.find('/')); }

// A shard's path has a folder part; a dataset folder's ("web") and the corpus's ("") do not.
bool IsShardPath(std::string_view file) { return file.find('/') != std::string_view::npos; }

// Corpus order: datasets by name, then shards by relative path. Sorting whole paths would put
// "web-a/x.h5" before "web/x.h5" ('-' < '/') although dataset "web" comes first.
void SortProblems(std::vector<Problem>* problems) {
  const auto key = [](const Problem& p) {
    return std::make_tuple(DatasetOf(p.file), std::string_view(p.file), p.index.has_value(),
                           p.index.value_or(0));
  };
  std::stable_sort(problems->begin(), problems->end(),
                   [&](const Problem& a, const Problem& b) { return key(a) < key(b); });
}

// The report as the scan alone gives it: its problems and the counts of what was found.
VerifyReport ReportFromScan(const CorpusScan& scan) {
  VerifyReport report;
  report.root = scan.table.root;
  std::set<std::string> datasets, bad_files;
  for (const auto& s : scan.table.shards) datasets.emplace(DatasetOf(s.path));
  for (const auto& p : scan.problems) {
    if (!p.file.empty()) datasets.emplace(DatasetOf(p.file));
    if (IsShardPath(p.file)) bad_files.insert(p.file);  // failed files are not in the table
  }
  report.datasets = datasets.size();
  report.files = scan.table.shards.size() + bad_files.size();
  report.files_read = scan.table.shards.size();
  report.documents = scan.table.total_docs();
  report.tokens = scan.table.total_tokens();
  report.problems = scan.problems;
  return report;
}

}  // namespace

uint64_t VerifyReport::FilesWithProblems() const {
  std::set<std::string_view> files;
  for (const auto& p : problems) {
    if (IsShardPath(p.file)) files.insert(p.file);
  }
  return files.size();
}

std::string VerifyReport::Summary(double seconds) const {
  const std::string counts =
      fmt::format("{} datasets, {} files, {} documents, {} tokens", GroupThousands(datasets),
                  GroupThousands(files), GroupThousands(documents), GroupThousands(tokens));
  if (ok()) return fmt::format("OK: {} checked in {:.1f} s{}", counts, seconds, ChecksumNote());
  std::string failed = fmt::format("FAILED: {} {}", GroupThousands(problems.size()),
                                   problems.size() == 1 ? "problem" : "problems");
  if (const uint64_t bad = FilesWithProblems(); bad > 0) {
    failed += fmt::format(" in {} of {} files", GroupThousands(bad), GroupThousands(files));
  }
  return fmt::format("{}; {} checked in {:.1f} s{}", failed, counts, seconds, ChecksumNote());
}

std::string VerifyReport::ChecksumNote() const {
  if (files_unrecorded == 0) return "";
  if (checksums_recorded == files_unrecorded) {
    return fmt::format("; checksum recorded in {} files", GroupThousands(checksums_recorded));
  }
  std::string note = fmt::format(
      "; {} files carry no checksum (written before stoker recorded one: ranks that see other "
      "content behind their names are not told apart",
      GroupThousands(files_unrecorded - checksums_recorded));
  return note + (checksums_recorded > 0
                     ? fmt::format("; recorded in {} others)", GroupThousands(checksums_recorded))
                     : "; stoker verify --record adds it)");
}

ShardVerdict VerifyShardContents(const std::string& root, const ShardInfo& shard,
                                 const ArrayLocations& arrays, const VerifyOptions& options) {
  ShardVerdict verdict;
  std::vector<Problem>& problems = verdict.problems;
  CheckSpecialIds(shard, &problems);
  std::optional<ContentChecker> checker;
  const std::string path = root + "/" + shard.path;
  try {
    checker.emplace(root, shard, arrays, options.block_elements);
    checker->CheckOffsets();
    checker->CheckTokens();
  } catch (const InternalError&) {
    throw;                    // a bug of stoker's, not a fault of the file
  } catch (const Error& e) {  // IoError, DataError, Hdf5Error: the file cannot be read through
    problems.push_back({shard.path, "", std::nullopt, WithoutPathPrefix(e.what(), path)});
  }
  // What was found before a read failed is still worth reporting.
  if (checker) checker->Report(&problems);
  const std::optional<uint64_t> content = checker ? checker->Checksum() : std::nullopt;
  if (content && shard.checksum && *content != *shard.checksum) {
    problems.push_back(
        {shard.path, kChecksumAttribute, std::nullopt,
         fmt::format("is {}, but the offsets and tokens hash to {}: the content changed since "
                     "the shard was written",
                     ChecksumText(*shard.checksum), ChecksumText(*content))});
  }
  verdict.unrecorded = !shard.checksum;
  if (verdict.unrecorded && content && problems.empty() && options.record) {
    try {
      h5::File file = h5::File::OpenReadWrite(path);
      file.WriteStringAttribute(kChecksumAttribute, ChecksumText(*content));
      file.Close();
      SyncPath(path, /*folder=*/false);
      verdict.recorded = true;
    } catch (const InternalError&) {
      throw;
    } catch (const Error& e) {
      problems.push_back({shard.path, kChecksumAttribute, std::nullopt,
                          "cannot be recorded: " + WithoutPathPrefix(e.what(), path)});
    }
  }
  return verdict;
}

VerifyReport VerifyCorpus(const mpi::Comm& comm, const std::string& root,
                          const VerifyOptions& options) {
  // A block and its widened copy, 16 bytes an element, must fit before the first is allocated.
  const auto ranks_on_node = static_cast<uint64_t>(comm.RanksOnThisNode());
  mpi::FailTogether(comm, [&] {
    const double bytes = 16.0 * static_cast<double>(options.block_elements);
    const MemoryBudget budget = DefaultMemoryBudget(ranks_on_node);
    STOKER_CHECK(bytes <= static_cast<double>(budget.bytes), ConfigError,
                 "--block {} needs {} per rank (16 bytes an element), above the {} a rank may "
                 "use ({})",
                 options.block_elements, FormatBytes(bytes),
                 FormatBytes(static_cast<double>(budget.bytes)), budget.why);
  });
  std::vector<ArrayLocations> arrays;
  const CorpusScan scan = ScanCorpus(comm, root, &arrays);
  const std::vector<ShardInfo>& shards = scan.table.shards;
  VerifyReport report = ReportFromScan(scan);

  std::vector<Problem> mine;
  uint64_t counts[2] = {0, 0};  // shards without a checksum, checksums recorded
  mpi::FailTogether(comm, [&] {
    for (size_t i = comm.rank(); i < shards.size(); i += comm.size()) {
      ShardVerdict verdict = VerifyShardContents(root, shards[i], arrays[i], options);
      for (auto& p : verdict.problems) mine.push_back(std::move(p));
      counts[0] += verdict.unrecorded;
      counts[1] += verdict.recorded;
    }
  });
  comm.SumInPlace(counts);
  report.files_unrecorded = counts[0];
  report.checksums_recorded = counts[1];
  ByteWriter out;
  out.Put<uint64_t>(mine.size());
  for (const auto& p : mine) EncodeProblem(p, &out);
  for (const std::string& bytes : comm.AllGather(out.bytes())) {
    ByteReader in(bytes);
    const auto n = in.Get<uint64_t>();
    for (uint64_t k = 0; k < n; ++k) report.problems.push_back(DecodeProblem(&in));
  }
  SortProblems(&report.problems);
  return report;
}

}  // namespace stoker
