// Streams of a Loader checked against the corpus, for the MPI tests of checkpoints and mixing:
// the truth of a corpus of unique token values (stoker synth --unique-tokens: a document's values
// are consecutive), batches pulled without throwing, tokens checked against their pieces, two
// streams compared batch by batch, and every framed token of epoch 0 counted over all ranks.
// A failure is reported with ADD_FAILURE, never thrown, so that every rank reaches the
// collectives that follow.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mpi/comm.h"
#include "stoker/loader.h"

namespace stoker::testing {

using Stream = std::vector<Batch>;

// Per dataset, per document: its length and the value of its first token.
struct Truth {
  std::vector<std::vector<uint64_t>> length;
  std::vector<std::vector<int64_t>> first;
  int64_t tokens = 0;
};

// Collective (discovery): the truth of the corpus at `root`.
Truth ReadTruth(const mpi::Comm& comm, const std::string& root);

// Every batch's tokens are what its pieces say ([BOS] first, first + 1, ... EOS of their
// documents) and its dataset_tokens their counts.
void ExpectTokensMatchPieces(const Truth& truth, const Stream& stream, const Loader& loader);

// `n` batches.
Stream Pull(Loader& loader, uint64_t n);

// Batches until this rank has started a document of epoch 1 of every dataset (a rank starts none
// before it has started all of its share of epoch 0) and finished every document of epoch 0 it
// has a piece of (one cut by a step's end goes on after the documents that fall due: it may end
// after documents of epoch 1 began). (Pieces of epoch 1 may come before: the rests of documents
// other ranks began, taken over at a rescale.) `datasets`: which datasets to wait for (empty:
// all).
Stream PullPastEpochZero(Loader& loader, const Truth& truth,
                         const std::vector<bool>& datasets = {});

// One stage of a chain of runs, collective over `world`: its ranks [0, ranks) resume from `from`
// (empty: start), pull to step `to` (or past epoch 0 when 0: PullPastEpochZero) and save to
// `save` (empty: no save); the other ranks wait. The batches' tokens are checked against their
// pieces (ExpectTokensMatchPieces). Returns this rank's batches.
Stream Stage(const mpi::Comm& world, const Truth& truth, const LoaderConfig& base, int ranks,
             const std::string& from, uint64_t to, const std::string& save);

// The same batches, tokens, dataset_tokens and pieces, in the same order.
void ExpectSameStream(const Stream& want, const Stream& got, const std::string& what, int rank);

// Collective. Every framed position of epoch 0 of every document, over the pieces of all ranks
// in `streams`, exactly once. Returns the framed tokens checked.
uint64_t ExpectEpochZeroExactlyOnce(const mpi::Comm& comm, const Truth& truth, bool bos,
                                    const std::vector<const Stream*>& streams,
                                    const std::string& what);

}  // namespace stoker::testing
