// Packing real data into one dataset of shards: `stoker pack`.
//
// Inputs are jsonl files (one JSON object per line; its `field` holds either an array of token
// ids or a string, which the byte tokenizer encodes) or text files (each file one document,
// byte-tokenized). Documents go into shards of at most `shard_tokens` tokens, in input order; a
// document never spans shards, and a longer one gets a shard of its own. Output files are
// OUT/part-RRRRR-KKKKK.h5 (rank, shard on that rank), so the dataset's path order is the order of
// the inputs; five digits each limit a run to 100,000 ranks and 100,000 shards a rank (a
// ConfigError beyond). The same inputs and options at the same number of ranks write the same
// bytes; another number of ranks splits the shards differently.
//
// PackDataset is collective: rank r packs inputs [r*n/W, (r+1)*n/W). Each rank buffers at most
// one shard (as uint32 while ids fit) and reads its inputs streaming. Any error (a bad line names
// its file and line) fails every rank with the same collective error, and every rank then removes
// the shards it wrote. `on_progress` is called on each rank with its own bytes consumed so far
// and its share's total bytes; it lets the command line draw progress without the library
// knowing about terminals.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mpi/comm.h"

namespace stoker {

enum class PackFormat {
  kAuto,   // .jsonl and .json files as jsonl, anything else as text
  kJsonl,  // every input is jsonl
  kText,   // every input is one text document
};

struct PackSpec {
  std::vector<std::string> inputs;  // files, packed in this order
  std::string out;                  // the dataset folder DIR/NAME
  PackFormat format = PackFormat::kAuto;
  std::string field = "tokens";               // the jsonl field holding a document
  uint64_t shard_tokens = uint64_t{1} << 26;  // tokens per shard (a longer document: its own)
  // For token-id arrays: every id must be below it, and it is stored as vocab_size. Without it
  // shards carry no vocab_size and their token type fits their largest id.
  std::optional<uint64_t> vocab_size;
  bool force = false;  // replace the part-*.h5 of a non-empty `out`
  std::function<void(uint64_t done_bytes, uint64_t total_bytes)> on_progress;

  // Throws one ConfigError listing every problem of the spec, a shard's buffer above what a rank
  // among `ranks_on_node` may use (DefaultMemoryBudget) among them.
  void Validate(uint64_t ranks_on_node = 1) const;
};

// What a pack wrote, summed over all ranks.
struct PackStats {
  uint64_t inputs = 0;
  uint64_t documents = 0;
  uint64_t tokens = 0;
  uint64_t shards = 0;
  uint64_t input_bytes = 0;
};

// Collective over `comm` (see the top of this file). Throws the same error on every rank.
PackStats PackDataset(const mpi::Comm& comm, const PackSpec& spec);

// The format `spec_format` gives the input at `path` (kJsonl or kText).
PackFormat InputFormat(PackFormat spec_format, const std::string& path);

}  // namespace stoker
