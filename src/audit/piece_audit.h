// PieceAudit: proves from piece traces (loader/piece_trace.h) that a history of runs, resumed from
// checkpoints on any rank counts and possibly killed, lost no framed token and delivered none
// twice. Pure: no I/O, no MPI; the caller reads the traces (and, optionally, corpus facts).
//
// The history is linear: run i (sorted by start step S_i) is valid for steps (S_i, S_{i+1}];
// its steps after S_{i+1} were replayed by run i + 1 and are ignored. The last run is valid up to
// the last step every one of its ranks recorded completely: a step is complete on a rank when a
// later step follows it in the rank's trace, or when its pieces add up to the rank's tokens per
// step (the most frequent sum of its steps known complete). Within the valid steps the audit
// checks:
//   - every rank has every step (a gap names the run, the rank and the steps);
//   - every step of a rank holds the rank's tokens per step (rows x (seq_len + 1); ranks may take
//     batches of different sizes, so each rank's is the most frequent sum of its complete steps);
//   - no framed position of a (dataset, document, epoch) is delivered twice (overlaps name both
//     pieces: run, rank, step, positions);
//   - none is skipped: a document's pieces cover its framed positions [0, k) without a hole (the
//     loader delivers a document from its start, piece after piece; a history that does not
//     start at step 0 is excused a missing start);
//   - with corpus facts, documents exist and pieces end within the framed length; a piece that
//     is followed in its step by another document's piece ends its document exactly, and off by
//     one at every such end is named as a framing that is not the runs' (audit/document_ends.h).
// It sorts compact copies of the pieces by (dataset, epoch, document, first) and sweeps them
// once: O(n log n) time, about 48 bytes per piece besides the input it releases as it goes.
//
// Thread safety: plain functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stoker {

// One piece a rank was handed at `step`: framed positions [first, first + count) of document
// `doc` (numbered within its dataset) in `epoch`.
struct TraceRecord {
  uint64_t step = 0;
  uint32_t dataset = 0;
  uint64_t doc = 0;
  uint64_t epoch = 0;
  uint64_t first = 0;
  uint64_t count = 0;
  bool operator==(const TraceRecord&) const = default;
};

// One run's trace: every rank's records, in file order.
struct TraceRun {
  uint64_t start_step = 0;
  uint64_t world = 0;
  std::vector<std::vector<TraceRecord>> ranks;  // indexed by rank
  std::vector<uint64_t> partial_bytes;          // per rank: bytes of a trailing partial record
                                                // the reader dropped (empty: none)
};

// What the audit may know of the corpus (stoker audit --data).
struct AuditCorpus {
  std::vector<std::string> names;  // per dataset, corpus order
  std::vector<uint64_t> docs;      // per dataset: documents
  std::vector<uint64_t> nonempty;  // per dataset: documents of at least one token
  bool bos = false;                // documents framed as BOS tokens EOS (else tokens EOS)
  // Per dataset: the documents the trace names (ascending, as DocumentsNamed gives them) and
  // their framed lengths (0 for an empty document, else tokens + 1, or + 2 with BOS).
  std::vector<std::vector<uint64_t>> named_docs;
  std::vector<std::vector<uint64_t>> framed_lengths;
};

// Per dataset of `datasets`: the distinct documents below `docs[dataset]` that any record names,
// ascending. Records of other datasets or documents are left out (the audit reports them).
std::vector<std::vector<uint64_t>> DocumentsNamed(const std::vector<TraceRun>& runs,
                                                  const std::vector<uint64_t>& docs);

struct RunSummary {
  uint64_t start_step = 0;
  uint64_t world = 0;
  uint64_t valid_end = 0;        // valid steps: (start_step, valid_end]
  uint64_t recorded_end = 0;     // the last step any rank recorded (start_step: none)
  uint64_t tokens_per_step = 0;  // per rank, the most frequent; 0 when no step is known
  std::vector<uint64_t> rank_tokens_per_step;  // each rank's (ranks may take other batch sizes)
  uint64_t pieces = 0;           // in the valid steps, all ranks
  uint64_t tokens = 0;
  std::vector<std::string> notes;  // superseded or dropped steps, partial records
};

struct EpochSummary {
  uint32_t dataset = 0;
  uint64_t epoch = 0;
  uint64_t docs = 0;                 // documents with at least one piece
  uint64_t tokens = 0;               // framed tokens delivered
  std::optional<uint64_t> complete;  // with corpus facts: documents delivered whole
};

struct AuditReport {
  static constexpr size_t kKeptProblems = 200;  // messages kept; problem_count counts all

  std::vector<RunSummary> runs;      // by start step
  uint64_t steps = 0;                // valid steps over the runs
  uint64_t pieces = 0;               // pieces checked
  uint64_t tokens = 0;               // framed tokens checked
  std::vector<EpochSummary> epochs;  // by dataset, then epoch
  std::vector<std::string> notes;    // on the trace folder as a whole
  std::vector<std::string> problems;
  uint64_t problem_count = 0;
  bool clean() const { return problem_count == 0; }
  // Counts `problem` and keeps it before every other (one that explains them).
  void AddFirst(std::string problem);
};

// Audits `runs` (sorted by start step, as ReadTraceDir returns them; taken by value so that each
// rank's records are released once copied). `corpus` is optional. Never throws for a bad trace:
// everything wrong is a problem of the report.
AuditReport AuditTrace(std::vector<TraceRun> runs, const AuditCorpus* corpus);

}  // namespace stoker
