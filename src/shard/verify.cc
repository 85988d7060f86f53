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
#include "shard/discovery.h"
#include "shard/shard_reader.h"
#include "stoker/program/memory.h"
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
    if (shard.vocab_size) {
      vocab_ = static_cast<uint64_t>(*shard.vocab_size);  // discovery: in [1, 2^63 - 1]
    } else if (shard.token_type == TokenType::kUint64) {
      id_limit_ = kIdLimit;
    }
  }

  void CheckOffsets() {
    uint64_t previous = 0;  // the last non-negative offset
    ForEachOffset(reader_, block_,
                  [&](uint64_t index, uint64_t offset) { CheckOffset(index, offset, &previous); });
  }

  void CheckTokens() {
    std::vector<int64_t> ids(std::min(block_, shard_.tokens));
    std::vector<char> scratch;
    for (uint64_t start = 0; start < shard_.tokens; start += ids.size()) {
      const uint64_t count = std::min<uint64_t>(ids.size(), shard_.tokens - start);
      reader_.ReadTokens(start, count, ids.data(), &scratch);
      CheckTokenBlock(start, std::span<const int64_t>(ids.data(), count));
    }
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
  const std::pair<const char*, std::optional<int64_t>> ids[] = {{"eos_id", shard.eos_id},
                                                                {"bos_id", shard.bos_id}};
  for (const auto& [name, id] : ids) {
    if (!id) continue;
    if (*id < 0) {
      out->push_back({shard.path, name, std::nullopt,
                      fmt::format("is {}; token ids are never negative", *id)});
    } else if (shard.vocab_size && *id >= *shard.vocab_size) {
      out->push_back(
          {shard.path, name, std::nullopt,
           fmt::format("is {}, outside [0, vocab_size) = [0, {})", *id, *shard.vocab_size)});
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
  if (ok()) return fmt::format("OK: {} checked in {:.1f} s", counts, seconds);
  std::string failed = fmt::format("FAILED: {} {}", GroupThousands(problems.size()),
                                   problems.size() == 1 ? "problem" : "problems");
  if (const uint64_t bad = FilesWithProblems(); bad > 0) {
    failed += fmt::format(" in {} of {} files", GroupThousands(bad), GroupThousands(files));
  }
  return fmt::format("{}; {} checked in {:.1f} s", failed, counts, seconds);
}

std::vector<Problem> VerifyShardContents(const std::string& root, const ShardInfo& shard,
                                         const ArrayLocations& arrays,
                                         const VerifyOptions& options) {
  std::vector<Problem> problems;
  CheckSpecialIds(shard, &problems);
  std::optional<ContentChecker> checker;
  try {
    checker.emplace(root, shard, arrays, options.block_elements);
    checker->CheckOffsets();
    checker->CheckTokens();
  } catch (const InternalError&) {
    throw;                    // a bug of stoker's, not a fault of the file
  } catch (const Error& e) {  // IoError, DataError, Hdf5Error: the file cannot be read through
    problems.push_back(
        {shard.path, "", std::nullopt, WithoutPathPrefix(e.what(), root + "/" + shard.path)});
  }
  // What was found before a read failed is still worth reporting.
  if (checker) checker->Report(&problems);
  return problems;
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
  mpi::FailTogether(comm, [&] {
    for (size_t i = comm.rank(); i < shards.size(); i += comm.size()) {
      for (auto& p : VerifyShardContents(root, shards[i], arrays[i], options))
        mine.push_back(std::move(p));
    }
  });
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
