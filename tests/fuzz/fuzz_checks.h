// The checks behind stoker's libFuzzer targets (tests/fuzz/*_fuzz.cc), one per parser stoker owns,
// shared with the unit test that replays tests/fuzz/regressions/ in the ordinary gcc build
// (tests/unit/fuzz_regressions_test.cc).
//
// Each takes arbitrary bytes. A stoker::Error other than InternalError is the expected answer to
// bad input and is swallowed; an InternalError (a failed STOKER_ASSERT), any other exception, a
// broken property (FuzzFailure: a round trip that does not give back what went in) or a sanitizer
// report is a bug: it escapes, which libFuzzer reports as a crash and gtest as a failure.
// Not thread safe (CheckTrace and CheckConfig use process-wide scratch state).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace stoker::fuzz {

// A property a parser broke on some input.
class FuzzFailure : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// A checkpoint rank file (state/checkpoint_codec.h) without its last 8 bytes: the check sets the
// header's payload length and appends the right XXH3-64, so that mutations reach the payload
// decoder instead of stopping at those two plain comparisons.
// A decoded checkpoint must encode and decode to itself, and pass or fail CheckStateFits
// (checkpoint/restore.h) against a corpus of its identity's datasets with a few documents each.
void CheckCheckpoint(std::string_view data);

// The --weights syntax (stoker/weights.h): parsed weights are finite, >= 0, under trimmed non-empty
// names, and print back (NAME=WEIGHT joined by commas) to text that parses to the same map. The
// same bytes go to ParseWeightSchedule (the inline --weights-schedule form) and to
// ParseWeightScheduleFile (TOML, or JSON when they open with '{'): a schedule either accepts has
// no WeightScheduleProblems, and FormatWeightSchedule's text parses back to it and prints the same.
void CheckWeights(std::string_view data);

// One line of `stoker pack`'s jsonl input (tools/jsonl_doc.h), with the field "tokens" and, when
// the line's length is odd, --vocab-size 50000: a string gives one token per byte that decodes back
// to it; ids come out unchanged, at most 2^63 - 1 and below the vocabulary.
void CheckJsonlLine(std::string_view data);

// Piece trace files (loader/piece_trace.h) read by ReadTraceDir and audited by AuditTrace
// (audit/piece_audit.h), which must never throw. Byte 0 shapes the trace folder: bits 0-1 the
// world of the run from step 0 (1 + value), bit 2 a second run, bits 3-4 its world, bit 5 corpus
// facts for the audit (bits 6-7: 1-4 datasets); byte 1 the second run's start step. The rest is
// split evenly into the rank files, in order. Files go to a scratch folder under $TMPDIR (or /tmp)
// made once per process and removed at exit, one trace folder per layout, overwritten each time.
void CheckTrace(std::string_view data);

// A `stoker run --config` file (cli/config_file.h) applied to a fresh `stoker run` subcommand:
// only ConfigError may come out. Defined in config_check.cc (it needs CLI11 and src/cli/run.cc).
void CheckConfig(std::string_view data);

}  // namespace stoker::fuzz
