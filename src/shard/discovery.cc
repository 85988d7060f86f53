#include "shard/discovery.h"

#include <algorithm>

#include "base/bytes.h"
#include "base/check.h"
#include "h5/h5.h"
#include "shard/corpus_listing.h"
#include "shard/manifest.h"
#include "stoker/program/fingerprint.h"
#include "tokens/token_type.h"

namespace stoker {

namespace {

void PutOptional(ByteWriter* out, const std::optional<int64_t>& value) {
  out->Put<uint8_t>(value.has_value());
  out->Put<int64_t>(value.value_or(0));
}

std::optional<int64_t> GetOptional(ByteReader* in) {
  const bool has = in->Get<uint8_t>() != 0;
  const auto value = in->Get<int64_t>();
  return has ? std::optional<int64_t>(value) : std::nullopt;
}

}  // namespace

void EncodeShardCheck(const ShardCheck& check, ByteWriter* out) {
  out->Put<uint8_t>(check.info.has_value());
  if (check.info) {
    const ShardInfo& s = *check.info;
    out->PutString(s.path);
    out->Put(s.dataset);
    out->Put(s.file_bytes);
    out->Put(s.docs);
    out->Put(s.tokens);
    out->Put(static_cast<uint8_t>(s.token_type));
    out->Put<uint8_t>(s.offsets_signed);
    for (const auto& at : {check.arrays.tokens, check.arrays.offsets}) {
      out->Put<uint8_t>(at.direct);
      out->Put(at.byte_offset);
    }
    const ShardVocabulary& v = *s.vocabulary;
    PutOptional(out, v.vocab_size);
    PutOptional(out, v.eos_id);
    PutOptional(out, v.bos_id);
    out->Put<uint8_t>(v.tokenizer.has_value());
    out->PutString(v.tokenizer.value_or(""));
    out->Put<uint8_t>(s.checksum.has_value());
    out->Put<uint64_t>(s.checksum.value_or(0));
  }
  out->Put<uint64_t>(check.problems.size());
  for (const auto& p : check.problems) EncodeProblem(p, out);
}

std::shared_ptr<const ShardVocabulary> VocabularyPool::Share(const ShardVocabulary& vocabulary) {
  // The latest few: shards of one dataset follow each other and mostly record the same. Only a
  // few, so that a corpus of a million different ones costs a million comparisons, not 10^12.
  constexpr size_t kLooked = 8;
  for (size_t k = 0; k < std::min(kLooked, held_.size()); ++k) {
    const auto& held = held_[held_.size() - 1 - k];
    if (*held == vocabulary) return held;
  }
  held_.push_back(std::make_shared<const ShardVocabulary>(vocabulary));
  return held_.back();
}

ShardCheck DecodeShardCheck(ByteReader* in, VocabularyPool* pool) {
  ShardCheck check;
  if (in->Get<uint8_t>() != 0) {
    ShardInfo s;
    s.path = in->GetString();
    s.dataset = in->Get<uint32_t>();
    s.file_bytes = in->Get<uint64_t>();
    s.docs = in->Get<uint64_t>();
    s.tokens = in->Get<uint64_t>();
    s.token_type = static_cast<TokenType>(in->Get<uint8_t>());
    s.offsets_signed = in->Get<uint8_t>() != 0;
    for (ArrayLocation* at : {&check.arrays.tokens, &check.arrays.offsets}) {
      at->direct = in->Get<uint8_t>() != 0;
      at->byte_offset = in->Get<uint64_t>();
    }
    ShardVocabulary v;
    v.vocab_size = GetOptional(in);
    v.eos_id = GetOptional(in);
    v.bos_id = GetOptional(in);
    const bool has_tokenizer = in->Get<uint8_t>() != 0;
    std::string tokenizer = in->GetString();
    if (has_tokenizer) v.tokenizer = std::move(tokenizer);
    s.vocabulary = pool ? pool->Share(v) : std::make_shared<const ShardVocabulary>(std::move(v));
    const bool has_checksum = in->Get<uint8_t>() != 0;
    const auto checksum = in->Get<uint64_t>();
    if (has_checksum) s.checksum = checksum;
    check.info = std::move(s);
  }
  check.problems.resize(in->Get<uint64_t>());
  for (auto& p : check.problems) p = DecodeProblem(in);
  return check;
}

void EncodeProblem(const Problem& problem, ByteWriter* out) {
  out->PutString(problem.file);
  out->PutString(problem.object);
  out->Put<uint8_t>(problem.index.has_value());
  out->Put<uint64_t>(problem.index.value_or(0));
  out->PutString(problem.message);
}

Problem DecodeProblem(ByteReader* in) {
  Problem problem;
  problem.file = in->GetString();
  problem.object = in->GetString();
  const bool has_index = in->Get<uint8_t>() != 0;
  const auto index = in->Get<uint64_t>();
  if (has_index) problem.index = index;
  problem.message = in->GetString();
  return problem;
}

std::string WithoutPathPrefix(std::string message, std::string_view path) {
  if (message.size() > path.size() + 1 && message.starts_with(path) &&
      message.compare(path.size(), 2, ": ") == 0) {
    message.erase(0, path.size() + 2);
  }
  return message;
}

std::string Problem::ToString() const {
  std::string where = file;
  if (!object.empty()) {
    if (!where.empty()) where += ": ";
    where += object;
    if (index) where += fmt::format("[{}]", *index);
  }
  return where.empty() ? message : where + ": " + message;
}

const std::shared_ptr<const ShardVocabulary>& ShardInfo::NoVocabulary() {
  static const auto none = std::make_shared<const ShardVocabulary>();
  return none;
}

bool ShardInfo::operator==(const ShardInfo& other) const {
  return path == other.path && dataset == other.dataset && token_type == other.token_type &&
         offsets_signed == other.offsets_signed && file_bytes == other.file_bytes &&
         docs == other.docs && tokens == other.tokens && checksum == other.checksum &&
         *vocabulary == *other.vocabulary;
}

uint64_t CorpusTable::total_docs() const {
  uint64_t n = 0;
  for (const auto& d : datasets) n += d.docs;
  return n;
}

uint64_t CorpusTable::total_tokens() const {
  uint64_t n = 0;
  for (const auto& d : datasets) n += d.tokens;
  return n;
}

void FinishTable(CorpusTable* table) {
  Fingerprinter fp;
  fp.Add(std::string_view("stoker corpus v1"));
  fp.Add(static_cast<uint64_t>(table->datasets.size()));
  for (auto& d : table->datasets) {
    d.docs = d.tokens = 0;
    for (uint32_t i = d.first_shard; i < d.first_shard + d.num_shards; ++i) {
      d.docs += table->shards[i].docs;
      d.tokens += table->shards[i].tokens;
    }
    fp.Add(d.name);
    fp.Add(d.num_shards);
  }
  for (const auto& s : table->shards) {
    fp.Add(s.path);
    fp.Add(s.dataset);
    fp.Add(s.file_bytes);
    fp.Add(s.docs);
    fp.Add(s.tokens);
    fp.Add(static_cast<uint64_t>(s.token_type));
    // Shards written before stoker recorded checksums keep the fingerprint they had: a
    // checkpoint of such a corpus still resumes on it.
    if (s.checksum) fp.Add(*s.checksum);
  }
  table->fingerprint = fp.Hex();
}

CorpusListing ShareListing(const mpi::Comm& comm, const std::string& root) {
  std::string listing_bytes;
  mpi::FailTogether(comm, [&] {
    if (comm.rank() != 0) return;
    ByteWriter out;
    EncodeListing(ListCorpus(root), &out);
    listing_bytes = out.Take();
  });
  comm.Broadcast(&listing_bytes, 0);
  ByteReader listing_in(listing_bytes);
  return DecodeListing(&listing_in);
}

CorpusScan ScanCorpus(const mpi::Comm& comm, const std::string& root,
                      std::vector<ArrayLocations>* arrays) {
  CorpusListing listing = ShareListing(comm, root);

  // Flatten to one list of files; file i is described by rank i mod W.
  std::vector<std::pair<std::string, uint32_t>> files;
  for (size_t d = 0; d < listing.datasets.size(); ++d) {
    for (const auto& path : listing.shards[d]) files.emplace_back(path, d);
  }
  ByteWriter mine;
  // DescribeShard reports bad files as problems; anything else (no memory, a bug) must not make
  // this rank leave the all-gather below alone.
  mpi::FailTogether(comm, [&] {
    for (size_t i = comm.rank(); i < files.size(); i += comm.size()) {
      EncodeShardCheck(DescribeShard(root, files[i].first, files[i].second), &mine);
    }
  });
  const std::vector<std::string> gathered = comm.AllGather(mine.bytes());
  std::vector<ByteReader> readers(gathered.begin(), gathered.end());
  std::vector<ShardCheck> checks(files.size());
  for (size_t i = 0; i < files.size(); ++i) checks[i] = DecodeShardCheck(&readers[i % comm.size()]);
  return AssembleScan(root, std::move(listing), std::move(checks), arrays);
}

CorpusScan AssembleScan(const std::string& root, CorpusListing listing,
                        std::vector<ShardCheck> checks, std::vector<ArrayLocations>* arrays) {
  CorpusScan scan;
  scan.table.root = root;
  if (arrays) arrays->clear();
  scan.problems = std::move(listing.problems);
  if (listing.datasets.empty()) {
    scan.problems.push_back({"", "", std::nullopt, "the corpus has no datasets (no subfolders)"});
  }
  VocabularyPool vocabularies;
  size_t i = 0;
  for (size_t d = 0; d < listing.datasets.size(); ++d) {
    if (listing.shards[d].empty()) {
      scan.problems.push_back(
          {listing.datasets[d], "", std::nullopt, "dataset folder has no shards (*.h5 files)"});
    }
    DatasetInfo dataset{.name = listing.datasets[d]};
    dataset.first_shard = static_cast<uint32_t>(scan.table.shards.size());
    for (size_t k = 0; k < listing.shards[d].size(); ++k, ++i) {
      ShardCheck& check = checks[i];
      for (auto& p : check.problems) scan.problems.push_back(std::move(p));
      if (!check.info) continue;
      check.info->dataset = static_cast<uint32_t>(scan.table.datasets.size());
      check.info->vocabulary = vocabularies.Share(*check.info->vocabulary);
      scan.table.shards.push_back(std::move(*check.info));
      if (arrays) arrays->push_back(check.arrays);
    }
    dataset.num_shards = static_cast<uint32_t>(scan.table.shards.size()) - dataset.first_shard;
    if (dataset.num_shards > 0) scan.table.datasets.push_back(std::move(dataset));
  }
  FinishTable(&scan.table);
  return scan;
}

std::string ListedProblems(const std::vector<Problem>& problems, std::string_view where_all) {
  constexpr size_t kShown = 20;
  std::string text;
  for (size_t i = 0; i < std::min(kShown, problems.size()); ++i) {
    text += "\n  " + problems[i].ToString();
  }
  if (problems.size() > kShown) {
    text += fmt::format("\n  ... and {} more problems ({})", problems.size() - kShown, where_all);
  }
  return text;
}

CorpusTable DiscoverCorpus(const mpi::Comm& comm, const std::string& root,
                           std::vector<ArrayLocations>* arrays) {
  std::optional<CorpusScan> from_manifest = ScanFromManifest(comm, root, arrays);
  CorpusScan scan = from_manifest ? std::move(*from_manifest) : ScanCorpus(comm, root, arrays);
  if (scan.problems.empty()) return std::move(scan.table);
  const std::string message = fmt::format(
      "corpus {} is not usable:{}", root,
      ListedProblems(scan.problems, fmt::format("stoker verify {} lists them all", root)));
  // Every rank holds the same scan, so every rank throws the same error here.
  throw DataError(message, /*collective=*/true);
}

CorpusScan ScanCorpus(MPI_Comm comm, const std::string& root) {
  return ScanCorpus(mpi::Comm(comm), root);
}

CorpusTable DiscoverCorpus(MPI_Comm comm, const std::string& root) {
  return DiscoverCorpus(mpi::Comm(comm), root);
}

}  // namespace stoker
