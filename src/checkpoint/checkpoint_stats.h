// CheckpointStats: what `stoker inspect` shows of a loader checkpoint step folder
// (docs/checkpoint.md): what shapes the order, and how far every rank and every dataset has got.
//
// CollectCheckpointStats reads the rank files of a step folder one at a time (memory: one file),
// through CheckpointStep (checkpoint_step.h), which checks that they form one checkpoint: an
// incomplete step is a ConfigError naming the missing files, a file that does not belong a
// DataError naming it. Not collective, no MPI: the command line calls it on one rank. Thread safe
// (no shared state). FormatCheckpointStats is pure.
//
// Epochs: a checkpoint holds cursors, not the corpus's document counts. Without the corpus, every
// logical shard counts, and one holding no documents of a dataset stays at epoch 0 for ever, so
// the lowest epoch is exact only when the dataset has at least as many documents as there are
// logical shards; progress is then the positions alone. Given the corpus table (its fingerprint
// must match the checkpoint's), shards with an empty slice are left out and progress is also
// given in epochs: documents passed over in all epochs / documents.
//
// A dealt dataset (docs/loader.md, "Epochs: dealt and walked") moves no shard cursor: its progress
// is where each rank's dealing stands in the dataset's stream (the position its dealer deals
// next; after a rescale not yet resumed, the old ranks' positions), and with the corpus the epochs
// are those positions / documents.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "order/partition.h"
#include "state/checkpoint_codec.h"
#include "stoker/corpus.h"

namespace stoker {

// One dataset's progress over some logical shards (one rank's, or all of them).
struct DatasetProgress {
  std::string name;
  uint64_t started = 0;          // framed tokens of the documents started, unfinished ones whole
                                 // (after a rescale, a rank holds its share)
  uint64_t shards = 0;           // logical shards counted (with documents: non-empty slices only)
  uint64_t epoch_min = 0;        // lowest epoch of the counted shards (0 when none)
  uint64_t epoch_max = 0;        // highest epoch of the counted shards
  uint64_t shards_at_max = 0;    // counted shards in epoch_max
  uint64_t positions = 0;        // summed positions in the shards' current epochs
  uint64_t unfinished = 0;       // documents cut by a row's end, to go on next
  std::optional<uint64_t> docs;  // documents in the counted shards' slices (one epoch)
  std::optional<uint64_t> docs_done;  // sum of epoch * slice size + position (dealt: the least
                                      // stream position)
  bool dealt = false;                 // dealt to the ranks: no shard counts; the least and the
  uint64_t stream_min = 0;            // greatest stream position of the ranks' dealing (the
  uint64_t stream_max = 0;            // epochs, given the documents: these / documents)

  // docs_done / docs, when both are known and docs > 0: 1.25 = one epoch and a quarter.
  std::optional<double> epochs_done() const;
};

struct RankProgress {
  uint64_t rank = 0;
  std::string file;
  uint64_t bytes = 0;
  IndexRange shards;                      // the logical shards it owns
  uint64_t generation = 0;                // rescales so far
  uint64_t unfinished = 0;                // documents cut by a row's end, all datasets
  std::vector<DatasetProgress> datasets;  // corpus order
};

struct CheckpointStats {
  std::string step_dir;
  uint32_t format_version = kCheckpointFormatVersion;  // as its files say (2 for 1 or 2)
  uint64_t step = 0;
  uint64_t world = 0;
  uint64_t generation = 0;  // the highest of the ranks' (they agree unless files were mixed)
  OrderIdentity identity;
  std::string run;              // the run that saved it (empty: files of format 1 or 2)
  std::string layout;           // the parallel layout it was saved under (empty: none)
  std::vector<double> weights;  // as saved by rank 0, normalized, corpus order
  MixSchedule schedule;         // the weights of every step, as saved by rank 0
  uint64_t bytes = 0;           // of all rank files
  bool with_corpus = false;     // the corpus table was given
  // The corpus record (corpus_record_file.h): its shards when whole, nullopt when the step has
  // none (saved before stoker wrote it) or it cannot be used, and then why (a resume warns the
  // same): corrupt, unreadable or of another corpus.
  std::optional<uint64_t> corpus_record_shards;
  std::string corpus_record_problem;
  std::vector<DatasetProgress> datasets;  // over all ranks, corpus order
  std::vector<RankProgress> ranks;
};

// The step folder `path` names, or nullopt when it is not a checkpoint (a corpus, say): `path`
// itself when it holds a loader/ folder with rank files (*.ckpt, *.ckpt.tmp) or is named
// step-<N> and holds a loader/ folder; its parent when `path` is such a loader/ folder.
std::optional<std::string> CheckpointStepFolder(const std::string& path);

// Reads and checks every rank file of `step_dir` (see the header comment). `corpus`: the
// checkpoint's corpus, or null when not at hand; a corpus of another fingerprint is a
// ConfigError naming both and the files that differ (corpus_record_file.h).
CheckpointStats CollectCheckpointStats(const std::string& step_dir, const CorpusTable* corpus);

// A readable description: the identity, a table per dataset and a table per rank and dataset,
// with thousands separators. Ends with a newline.
std::string FormatCheckpointStats(const CheckpointStats& stats);

}  // namespace stoker
