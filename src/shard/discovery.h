// Corpus discovery, the internal side of stoker/corpus.h. See that header for the contract.
// Also the pieces every corpus check shares: the encoding of a Problem between ranks, and the
// cleaning of error messages that name a file a Problem already names. Only ScanCorpus and
// DiscoverCorpus are collective; the rest is plain functions, safe from any thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.h"
#include "mpi/comm.h"
#include "shard/corpus_listing.h"
#include "shard/shard_check.h"
#include "stoker/corpus.h"

namespace stoker {

// Collective over `comm`: rank 0's listing of the corpus (ListCorpus), on every rank; its
// ConfigError on every rank.
CorpusListing ShareListing(const mpi::Comm& comm, const std::string& root);

// Collective over `comm`. With `arrays`, also where each shard's arrays lie: (*arrays)[i] for
// table.shards[i], what ShardReader needs to read them with pread.
CorpusScan ScanCorpus(const mpi::Comm& comm, const std::string& root,
                      std::vector<ArrayLocations>* arrays = nullptr);
CorpusTable DiscoverCorpus(const mpi::Comm& comm, const std::string& root,
                           std::vector<ArrayLocations>* arrays = nullptr);

// Fills the per-dataset totals and the fingerprint from the datasets' names and the shards.
void FinishTable(CorpusTable* table);

// The scan of `listing` from the checks of its files (`checks[i]` the i-th shard of the listing,
// dataset after dataset): its table, fingerprint and problems, and the arrays' locations.
CorpusScan AssembleScan(const std::string& root, CorpusListing listing,
                        std::vector<ShardCheck> checks, std::vector<ArrayLocations>* arrays);

// The first 20 problems, a line each ("\n  PROBLEM"), and how many more, saying `where_all` they
// are listed.
std::string ListedProblems(const std::vector<Problem>& problems, std::string_view where_all);

// The vocabularies of a table's shards, held once each where shards near each other record the
// same (a corpus records a handful, dataset by dataset). Not thread safe.
class VocabularyPool {
 public:
  // The pool's copy of `vocabulary`, added when none of the latest few it added is equal.
  std::shared_ptr<const ShardVocabulary> Share(const ShardVocabulary& vocabulary);

 private:
  std::vector<std::shared_ptr<const ShardVocabulary>> held_;
};

// The one encoding of a ShardCheck that crosses ranks and goes into a corpus manifest. Decoded
// with a pool, its vocabulary is the pool's.
void EncodeShardCheck(const ShardCheck& check, ByteWriter* out);
ShardCheck DecodeShardCheck(ByteReader* in, VocabularyPool* pool = nullptr);

// The one encoding of a Problem that crosses ranks (all-gathers of problems).
void EncodeProblem(const Problem& problem, ByteWriter* out);
Problem DecodeProblem(ByteReader* in);

// `message` without a leading "PATH: ": error messages of readers name the file's full path,
// which a Problem already gives (relative to the corpus root).
std::string WithoutPathPrefix(std::string message, std::string_view path);

}  // namespace stoker
