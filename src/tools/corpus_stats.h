// CorpusStats: what `stoker inspect` shows of a corpus. Per dataset: files, documents, tokens,
// token types, and document-length statistics (min, mean, percentiles, max) from a
// LengthHistogram, so memory stays constant however many documents the corpus holds.
//
// CollectCorpusStats is collective over `comm`: it discovers the corpus (a bad corpus makes every
// rank throw the same DataError), then rank r streams the /doc_offsets of files r, r + W, ... in
// blocks, and the histograms are merged across ranks. Every rank returns the same stats. Offsets
// that decrease or pass the end of /tokens (discovery checks only the first and the last) make
// every rank throw DataError, naming the file and the index.
//
// The stats are plain values. FormatCorpusStats is pure.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mpi/comm.h"
#include "stoker/corpus.h"
#include "tokens/length_histogram.h"

namespace stoker {

struct DatasetStats {
  std::string name;
  uint64_t files = 0;
  uint64_t docs = 0;
  uint64_t tokens = 0;
  std::vector<TokenType> token_types;   // the distinct types of its shards, in enum order
  std::vector<std::string> tokenizers;  // the distinct tokenizer attributes of its shards, sorted
  LengthHistogram doc_lengths;          // document lengths in tokens
};

struct CorpusStats {
  std::string root;                    // the folder as given
  std::string fingerprint;             // CorpusTable::fingerprint
  std::vector<DatasetStats> datasets;  // sorted by name
  uint64_t total_files = 0;
  uint64_t total_docs = 0;
  uint64_t total_tokens = 0;
  std::vector<TokenType> token_types;  // over all datasets
  LengthHistogram doc_lengths;         // over all datasets
};

// Collective over `comm`; see the header comment. `block_elements` offsets are read at a time.
CorpusStats CollectCorpusStats(const mpi::Comm& comm, const std::string& root,
                               uint64_t block_elements = uint64_t{1} << 20);

// A readable table: one row per dataset and a total row, with thousands separators, followed by
// the fingerprint. Ends with a newline.
std::string FormatCorpusStats(const CorpusStats& stats);

}  // namespace stoker
