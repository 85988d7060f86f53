// Importing tokenized corpora of other stacks into one stoker dataset: `stoker import`.
//
// Formats (each reader lives in its own file, behind ImportInput, import/import_input.h):
//   kMegatron  Megatron-LM indexed datasets, PREFIX.idx + PREFIX.bin (import/megatron_input.h);
//              a stoker document is a Megatron document, all its sequences.
//   kNpy       OLMo / Dolma token files: headerless arrays, or real .npy files; documents end at
//              each eos_id (import/token_file_input.h).
//   kMds       Mosaic Streaming MDS folders; one sample's column is one document
//              (import/mds_input.h).
//
// Tokens keep the input's type, documents keep their order, and every input is checked as
// strictly as `stoker verify` checks a shard: a bad or truncated input is one error naming the
// file and what is wrong. Shards are OUT/part-RRRRR-KKKKK.h5, as `stoker pack` names them, with
// the input's format, files and sizes in each shard's `source` attribute (docs/format.md).
//
// ImportDataset is collective. The ranks split the input by bytes: rank r imports the documents
// (MDS: the shards) that start in the r-th of W equal parts of the input's bytes, so each rank
// reads about as much, and path order is input order. Rank 0 holds the lock of OUT for the whole
// import (a second import into OUT is refused on every rank, naming the first); everything is
// written into a hidden folder beside OUT (DIR/.NAME.import, which discovery ignores) and
// renamed to OUT when every rank has succeeded: a failure leaves no half-written dataset behind,
// and what a crash leaves is removed by the next import into OUT (import/import_output.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mpi/comm.h"
#include "stoker/token_type.h"

namespace stoker {

enum class ImportFormat { kMegatron, kNpy, kMds };

// "megatron", "npy", "mds".
const char* ImportFormatName(ImportFormat format);

struct ImportSpec {
  ImportFormat format = ImportFormat::kMegatron;
  std::vector<std::string> inputs;  // prefixes, token files or MDS folders, imported in order
  std::string out;                  // the dataset folder DIR/NAME
  // The end-of-document id, recorded as the shards' eos_id (the id the loader appends to every
  // document). Megatron takes exactly one of the two: --eod-id (a document ending in it loses
  // that token) or --eos-id (documents stay whole); stoker does not guess one. npy: --eos-id,
  // required (documents end at each one, which is removed). MDS: --eos-id, recorded only.
  std::optional<uint64_t> eod_id;
  std::optional<uint64_t> eos_id;
  // npy: the type of headerless files. MDS: the element type of a `bytes` column (int64, as
  // llm-foundry writes it, by default).
  std::optional<TokenType> dtype;
  // npy: import a file whose last document has no --eos-id after it (else an error naming it).
  bool allow_unterminated = false;
  std::string column;                  // MDS: the column holding the token ids
  std::optional<uint64_t> vocab_size;  // every id must be below it; recorded as vocab_size
  bool narrow = false;                 // shards in the narrowest unsigned type that holds them
  uint64_t shard_tokens = uint64_t{1} << 26;  // tokens per shard (a longer document: its own)
  bool force = false;                         // replace an existing, non-empty OUT
  // Called on each rank with its own bytes read so far and its share's total.
  std::function<void(uint64_t done_bytes, uint64_t total_bytes)> on_progress;

  // Throws one ConfigError listing every problem of the spec (the memory a shard takes is
  // checked once the input's type is known).
  void Validate() const;
  // The id recorded as the shards' eos_id: --eod-id or --eos-id.
  std::optional<uint64_t> RecordedEosId() const { return eod_id ? eod_id : eos_id; }
};

// What an import wrote, summed over all ranks.
struct ImportStats {
  uint64_t inputs = 0;       // files or folders given
  uint64_t input_bytes = 0;  // the bytes the work was split by
  uint64_t documents = 0;
  uint64_t tokens = 0;
  uint64_t shards = 0;
  uint64_t eos_removed = 0;  // documents whose final eos_id was removed
  uint64_t eos_kept = 0;     // documents that end in the --eos-id and keep it (Megatron)
  std::string token_type;    // of the shards: "uint16", or "mixed(uint8,uint16)" with --narrow
};

// Collective over `comm` (see the top of this file). Throws the same error on every rank.
ImportStats ImportDataset(const mpi::Comm& comm, const ImportSpec& spec);

// Collective: removes what imports into `out` that did not finish left beside it, once no
// import into `out` runs, and returns each removed folder as "PATH (SIZE)" (none: nothing was
// left). Throws the same error on every rank: ConfigError naming the running import.
std::vector<std::string> RemoveImportLeftovers(const mpi::Comm& comm, const std::string& out);

}  // namespace stoker
