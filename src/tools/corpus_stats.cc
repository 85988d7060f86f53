#include "tools/corpus_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/bytes.h"
#include "base/check.h"
#include "base/text_table.h"
#include "shard/discovery.h"
#include "shard/shard_reader.h"
#include "tokens/token_type.h"

namespace stoker {

namespace {

// LengthHistogram::ToWords() layout: the bucket counts, then count, sum, min, max.
constexpr size_t kWords = LengthHistogram::kBuckets + 4;
constexpr size_t kMinWord = LengthHistogram::kBuckets + 2;
constexpr size_t kMaxWord = LengthHistogram::kBuckets + 3;

// Adds the lengths of one shard's documents to `lengths`, reading its offsets in blocks.
void AddDocumentLengths(const std::string& root, const ShardInfo& shard,
                        const ArrayLocations& arrays, uint64_t block, LengthHistogram* lengths) {
  ShardReader reader(root, shard, arrays);
  uint64_t previous = 0;
  ForEachOffset(reader, block, [&](uint64_t index, uint64_t offset) {
    STOKER_CHECK(offset >= previous && offset <= shard.tokens, DataError,
                 "{}/{}: /doc_offsets[{}]: offset {} is not between the previous offset {} and "
                 "the end of /tokens ({}); `stoker verify {}` lists every problem",
                 root, shard.path, index,
                 shard.offsets_signed ? fmt::format("{}", static_cast<int64_t>(offset))
                                      : fmt::format("{}", offset),
                 previous, shard.tokens, root);
    if (index > 0) lengths->Add(offset - previous);
    previous = offset;
  });
}

// Sums the histograms of all ranks. Counts and sums add; min and max do not, so they travel in
// an all-gather of their own.
void MergeAcrossRanks(const mpi::Comm& comm, std::vector<LengthHistogram>* histograms) {
  std::vector<uint64_t> words;
  ByteWriter extremes;
  for (const auto& h : *histograms) {
    std::vector<uint64_t> w = h.ToWords();
    extremes.Put(w[kMinWord]);
    extremes.Put(w[kMaxWord]);
    w[kMinWord] = w[kMaxWord] = 0;
    words.insert(words.end(), w.begin(), w.end());
  }
  comm.SumInPlace(words);
  const size_t n = histograms->size();
  std::vector<uint64_t> mins(n, std::numeric_limits<uint64_t>::max()), maxs(n, 0);
  for (const std::string& bytes : comm.AllGather(extremes.bytes())) {
    ByteReader in(bytes);
    for (size_t d = 0; d < n; ++d) {
      mins[d] = std::min(mins[d], in.Get<uint64_t>());
      maxs[d] = std::max(maxs[d], in.Get<uint64_t>());
    }
  }
  for (size_t d = 0; d < n; ++d) {
    const std::span<uint64_t> w(words.data() + d * kWords, kWords);
    w[kMinWord] = mins[d];
    w[kMaxWord] = maxs[d];
    (*histograms)[d] = LengthHistogram::FromWords(w);
  }
}

void AddType(TokenType type, std::vector<TokenType>* types) {
  if (std::find(types->begin(), types->end(), type) != types->end()) return;
  types->push_back(type);
  std::sort(types->begin(), types->end());
}

CorpusStats StatsOf(const CorpusTable& table, std::vector<LengthHistogram> histograms) {
  CorpusStats stats{.root = table.root, .fingerprint = table.fingerprint};
  for (size_t d = 0; d < table.datasets.size(); ++d) {
    const DatasetInfo& info = table.datasets[d];
    DatasetStats ds{.name = info.name,
                    .files = info.num_shards,
                    .docs = info.docs,
                    .tokens = info.tokens,
                    .doc_lengths = std::move(histograms[d])};
    for (uint32_t i = info.first_shard; i < info.first_shard + info.num_shards; ++i) {
      AddType(table.shards[i].token_type, &ds.token_types);
      AddType(table.shards[i].token_type, &stats.token_types);
      const std::optional<std::string>& tokenizer = table.shards[i].vocabulary->tokenizer;
      if (tokenizer && std::find(ds.tokenizers.begin(), ds.tokenizers.end(), *tokenizer) ==
                           ds.tokenizers.end()) {
        ds.tokenizers.insert(
            std::upper_bound(ds.tokenizers.begin(), ds.tokenizers.end(), *tokenizer), *tokenizer);
      }
    }
    stats.total_files += ds.files;
    stats.total_docs += ds.docs;
    stats.total_tokens += ds.tokens;
    stats.doc_lengths.Merge(ds.doc_lengths);
    stats.datasets.push_back(std::move(ds));
  }
  return stats;
}

// "1234.56" -> "1,234.6": one decimal, thousands grouped.
std::string FormatMean(double mean) {
  const double rounded = std::round(mean * 10.0) / 10.0;
  const auto whole = static_cast<uint64_t>(rounded);
  const auto tenth = static_cast<int>(std::lround((rounded - static_cast<double>(whole)) * 10.0));
  return fmt::format("{}.{}", GroupThousands(whole), tenth);
}

std::vector<std::string> Row(const std::string& name, uint64_t files, uint64_t docs,
                             uint64_t tokens, const std::string& dtype, const LengthHistogram& h) {
  return {name,
          GroupThousands(files),
          GroupThousands(docs),
          GroupThousands(tokens),
          dtype,
          GroupThousands(h.min()),
          FormatMean(h.mean()),
          GroupThousands(h.Percentile(0.5)),
          GroupThousands(h.Percentile(0.9)),
          GroupThousands(h.Percentile(0.99)),
          GroupThousands(h.max())};
}

}  // namespace

// Pads the columns: those in `left` left-aligned, the others right-aligned.
CorpusStats CollectCorpusStats(const mpi::Comm& comm, const std::string& root,
                               uint64_t block_elements) {
  std::vector<ArrayLocations> arrays;
  const CorpusTable table = DiscoverCorpus(comm, root, &arrays);
  std::vector<LengthHistogram> histograms(table.datasets.size());
  mpi::FailTogether(comm, [&] {
    for (size_t i = comm.rank(); i < table.shards.size(); i += comm.size()) {
      const ShardInfo& shard = table.shards[i];
      AddDocumentLengths(root, shard, arrays[i], block_elements, &histograms[shard.dataset]);
    }
  });
  MergeAcrossRanks(comm, &histograms);
  return StatsOf(table, std::move(histograms));
}

std::string FormatCorpusStats(const CorpusStats& stats) {
  std::vector<std::vector<std::string>> rows = {
      {"dataset", "files", "docs", "tokens", "dtype", "min", "mean", "p50", "p90", "p99", "max"}};
  for (const auto& d : stats.datasets) {
    rows.push_back(
        Row(d.name, d.files, d.docs, d.tokens, TokenTypesLabel(d.token_types), d.doc_lengths));
  }
  rows.push_back(Row("total", stats.total_files, stats.total_docs, stats.total_tokens,
                     TokenTypesLabel(stats.token_types), stats.doc_lengths));
  std::string out = fmt::format("corpus {}\n", stats.root);
  out += "document lengths (min, mean, p50, p90, p99, max) in tokens\n\n";
  out += Tabulate(rows, {0, 4});  // names and types left, numbers right
  out += fmt::format("\nfingerprint {}\n", stats.fingerprint);
  return out;
}

}  // namespace stoker
