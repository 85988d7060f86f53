// stoker::Loader: every rank's stream of fixed-length token rows for training.
//
// Together the ranks of a communicator see every document of every dataset exactly once per
// epoch, in a globally shuffled order that depends only on the seed, the corpus and the number of
// logical shards; mixed across datasets by weight; packed into rows of seq_len + 1 tokens (inputs
// are a row without its last token, labels a row without its first). No rank builds an index or
// holds the order; ranks do not talk to each other while they stream.
//
// Construction is collective over `comm` (the loader duplicates it): it discovers the corpus,
// checks the configuration on every rank and fails on every rank together. After that, each rank
// calls Next() on its own; a background thread per rank reads ahead `prefetch` batches in the
// known future order, so the trainer rarely waits. Next() and the destructor must be called from
// one thread (the trainer's). Errors of the reading thread are rethrown by Next().
//
// This header does not need libtorch; stoker/torch.h turns a Batch into a tensor.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/corpus.h"

namespace stoker {

struct LoaderConfig {
  std::string data;                       // the corpus folder
  std::map<std::string, double> weights;  // dataset -> relative weight; empty: by tokens.
                                          // Datasets not named get weight 0 (not read).
  uint64_t seq_len = 4096;                // tokens per row are seq_len + 1
  uint64_t batch_size = 8;                // rows per batch, per rank
  uint64_t seed = 0;                      // shapes the order; never taken from a clock
  uint64_t logical_shards = 65536;        // units of the order that ranks own (>= ranks)
  std::optional<int64_t> eos_id;          // default: the corpus's eos_id attribute, else 0
  std::optional<int64_t> bos_id;          // default: no BOS
  uint32_t prefetch = 4;                  // batches read ahead per rank (>= 1)
  uint64_t offset_cache_bytes = 8u << 20; // document offsets cached per rank
  uint32_t max_open_files = 128;          // shard files a rank keeps open

  // Every problem of the configuration that can be seen without the corpus, one line each.
  std::vector<std::string> Problems() const;
};

struct Batch {
  uint64_t step = 0;        // 1 for the first batch of a run that started from scratch
  uint64_t rows = 0;        // batch_size
  uint64_t row_tokens = 0;  // seq_len + 1
  std::vector<int64_t> tokens;           // rows * row_tokens token ids, row after row
  std::vector<uint64_t> dataset_tokens;  // per dataset (corpus order): tokens in this batch
};

class Loader {
 public:
  // Collective over `comm`. Throws ConfigError or DataError on every rank together.
  Loader(MPI_Comm comm, const LoaderConfig& config);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The next batch of this rank. The stream wraps from epoch to epoch and does not end: the
  // optional is empty only after an error was already thrown.
  std::optional<Batch> Next();

  const CorpusTable& corpus() const;
  // Weights as used, normalized, per dataset in corpus order.
  const std::vector<double>& weights() const;
  int64_t eos_id() const;
  std::optional<int64_t> bos_id() const;
  int rank() const;
  int world_size() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace stoker
