// Synthetic corpora for tests and benchmarks: `stoker synth`.
//
// A SynthSpec names datasets, each with a token count and a mean document length; Synthesize-
// Corpus writes them as OUT/NAME/part-00000.h5, part-00001.h5, ... Document lengths are
// log-normal (sigma 1 of the underlying normal, mu chosen so the mean is mean_doc_len, at least
// one token); tokens are uniform in [0, vocab - 1), and vocab - 1 is the eos_id no document uses.
// With unique_tokens every token is instead its position in the whole corpus (dataset by dataset,
// file by file), so each value occurs exactly once: tests use it to count tokens. The shards then
// say eos_id = total tokens, bos_id = total tokens + 1, vocab_size = total tokens + 2.
//
// Every random stream is keyed by (seed, purpose, dataset index, file index), so a file's bytes
// depend only on the spec: the same spec writes the same bytes, whatever the number of ranks.
//
// SynthesizeCorpus is collective: file j (numbered over all datasets) is written by rank j mod W,
// streaming its tokens in blocks (only the document offsets of one file are held in memory). An
// error on any rank fails every rank with the same collective error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mpi/comm.h"

namespace stoker {

struct SynthDataset {
  std::string name;            // the dataset's folder name
  uint64_t tokens = 0;         // tokens over all its files
  double mean_doc_len = 1000;  // mean document length in tokens
};

struct SynthSpec {
  std::string out;                     // the corpus folder; created when missing
  std::vector<SynthDataset> datasets;  // at least one; names distinct
  uint32_t files = 1;                  // shards per dataset
  uint64_t seed = 0;                   // the one source of randomness
  uint64_t vocab = 50304;              // ids drawn from [0, vocab - 1); eos_id = vocab - 1
  bool unique_tokens = false;          // token = its position in the corpus (see above)
  // Write into a folder that already holds shards: first remove the part-*.h5 files of the
  // dataset folders this spec writes (so none is left from an earlier run with more files). Other
  // shards there would mix with this corpus: they are refused, forced or not.
  bool force = false;

  // Throws one ConfigError listing every problem of the spec.
  void Validate() const;
};

// What a synthesis wrote, summed over all ranks.
struct SynthStats {
  uint64_t files = 0;
  uint64_t docs = 0;
  uint64_t tokens = 0;
  uint64_t bytes = 0;  // file sizes
};

// Parses the command line's NAME:TOKENS[:MEAN_DOC_LEN]. TOKENS takes the suffixes K, M, G
// (10^3, 10^6, 10^9). Throws ConfigError quoting `text` when it does not parse.
SynthDataset ParseSynthDataset(std::string_view text);

// Collective over `comm` (see the top of this file). Throws the same error on every rank.
SynthStats SynthesizeCorpus(const mpi::Comm& comm, const SynthSpec& spec);

}  // namespace stoker
