// The loader checkpoint file, format version 5 (docs/checkpoint.md): one file per rank holding
// its RankState, the weight schedule it ran under, everything that shapes the order, so that
// a resume can refuse a checkpoint of another corpus, seed, logical-shard count, seq_len or
// EOS/BOS and say what differs, the identity of the run that saved it, so that the rank files
// of one step can be told to be one save, and the parallel layout it was saved under.
//
//   bytes 0..7    magic "STOKERCK"
//   bytes 8..11   format version, uint32 little-endian (5; versions 1 to 4, of the mixer by
//                 deficits before the lanes, are still read: version 4 with a layout always,
//                 3 without, 2 without the run identity, 1 without the schedule and deficits)
//   bytes 12..19  payload length P, uint64 little-endian
//   bytes 20..    payload: LEB128 varints, zigzag for signed values, length-prefixed strings
//   last 8 bytes  XXH3-64 of every byte before them, little-endian
// (the frame and the fields are state/field_codec.h's, which the corpus record shares; the
// lane's fields are state/lane_codec.h's)
//
// Cursors are stored as differences from the previous logical shard's cursor of the same
// dataset: a rank's shards advance together, so most cursors take one byte (docs/checkpoint.md).
// Pure: no I/O. Decoding checks the magic, version, length and checksum first and never trusts a
// count it has not checked against the bytes left; any problem is a DataError naming `source`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mixing/mix_schedule.h"
#include "state/loader_state.h"

namespace stoker {

inline constexpr uint32_t kCheckpointFormatVersion = 5;

// What shapes the order: a resume must match all of it (the weights are not part of it: they
// may change).
struct OrderIdentity {
  std::string corpus_fingerprint;
  uint64_t seed = 0;
  uint64_t logical_shards = 0;
  uint64_t seq_len = 0;
  int64_t eos_id = 0;
  std::optional<int64_t> bos_id;
  std::vector<std::string> datasets;  // names, corpus order
  bool operator==(const OrderIdentity&) const = default;
};

struct RankCheckpoint {
  OrderIdentity identity;
  std::vector<double> weights;  // in force at the saved step (MixSchedule::WeightsAt)
  MixSchedule schedule;         // the weights of every step, as the run had them (version 1:
                                // `weights` from step 0 on)
  uint64_t world = 1;
  uint64_t rank = 0;
  // The run that saved it: 32 lowercase hex digits (128 random bits drawn once per run,
  // checkpoint/run_id.h), the same in every rank file of one save. Empty in a file of version 1
  // or 2, which carries none.
  std::string run;
  // The parallel layout it was saved under (stoker/layout.h, as ParallelLayout::Text gives it,
  // dp included): `world` is then its dp size. Empty for none (always in files of versions 1
  // to 3).
  std::string layout;
  RankState state;
  bool operator==(const RankCheckpoint&) const = default;
};

// Version 5; a checkpoint without a run identity (read from a file of version 1 or 2, or
// resharded from one) as version 2, so that it reads back as it was: its state must then hold
// no lane's units open and no clock (the loader opens them when it resumes).
std::string EncodeCheckpoint(const RankCheckpoint& checkpoint);
// The version EncodeCheckpoint writes for a checkpoint of this run identity (2 or 5).
uint32_t CheckpointVersion(const std::string& run);

// Throws DataError naming `source` (a file name) when the bytes are not a valid checkpoint.
RankCheckpoint DecodeCheckpoint(std::string_view bytes, const std::string& source);

// A weight schedule's fields as a rank file holds them, alone (rank 0 broadcasts its file's).
std::string EncodeMixSchedule(const MixSchedule& schedule);
// Throws DataError naming `source` when the bytes are not a schedule of `datasets` datasets.
MixSchedule DecodeMixSchedule(std::string_view bytes, uint64_t datasets, const std::string& source);

// The differences between what a checkpoint was saved with and what a resume asks for, one line
// each ("seed: checkpoint 1, now 2"); empty when they match.
std::vector<std::string> IdentityDifferences(const OrderIdentity& saved, const OrderIdentity& now);

}  // namespace stoker
