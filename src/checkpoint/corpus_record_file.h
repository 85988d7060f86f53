// The corpus record of a step folder, step-<N>/loader/corpus.table (docs/checkpoint.md): the
// corpus table the checkpoint was saved from, so that a resume (restore.h) or `stoker inspect
// --data` (checkpoint_stats.h) on a corpus that changed can name the files added, removed or
// changed.
//
// Rank 0 alone writes it, beside its rank file and before it (Loader::Save through
// CheckpointWriter), with the same write-then-rename discipline: the table is the same on every
// rank, and a corpus of 10^5 shards makes a record of about 2 MB, which 10^4 rank files must not
// each repeat. A separate file rather than a section of rank file 0 keeps the rank file format
// (and its version) unchanged and the record out of the per-rank reads of a resume. It is not
// part of a step's completeness (checkpoint_store.h): a step saved before stoker wrote it
// resumes as before, and a refusal then says only that the fingerprints differ.
// Not collective, no MPI; thread safe (no shared state).
#pragma once

#include <optional>
#include <string>

#include "state/corpus_record.h"
#include "stoker/corpus.h"

namespace stoker {

// What the record keeps of `table`.
CorpusRecord RecordOf(const CorpusTable& table);
// The record of `table`, encoded (EncodeCorpusRecord) with no copy of its rows made.
std::string EncodedRecordOf(const CorpusTable& table);

// The record of `step_dir`, or nullopt when it has none. Throws IoError (cannot read) or DataError
// (corrupt), naming the file. With `bytes`, also the file's bytes as read.
std::optional<CorpusRecord> ReadCorpusRecord(const std::string& step_dir,
                                             std::string* bytes = nullptr);

// `step_dir`'s corpus record, when it is whole and records the corpus of `fingerprint` (its rank
// files'; empty: not compared); otherwise `problem` says why not: unreadable, corrupt (a flipped
// byte fails the checksum) or of another corpus. Never throws. Both empty: the step has no record
// (saved before stoker wrote it), which is no fault.
struct CorpusRecordCheck {
  std::optional<CorpusRecord> record;
  std::string problem;
};
CorpusRecordCheck CheckCorpusRecord(const std::string& step_dir, const std::string& fingerprint);

// For a refusal whose corpus fingerprints differ: one line saying which files differ between
// `step_dir`'s record and `now` (state/corpus_diff.h), or why that is not known (the step has
// no record, or one of another fingerprint than `saved_fingerprint`, its rank files', or a
// corrupt one). Never throws for the record's sake: the refusal matters more than the detail.
std::string CorpusChangeNote(const std::string& step_dir, const std::string& saved_fingerprint,
                             const CorpusTable& now);

}  // namespace stoker
