// The fields of a lane's state (mixing/lane.h) in a loader rank file, format 5
// (state/checkpoint_codec.h), and in the parts of a rescale (state/rescale.h).
//
// A dealer state: position, start, the number of loads (0, for a dataset walked, or the lanes),
// the least load and each load above it (the loads lie within a unit of each other: most take a
// byte or two), then the positions passed over as differences (the first from the position).
// The lane's state: per dataset its dealer state, the framed tokens started, its earlier states
// (a count, then each); then the open units (a count, then each: dataset, position, epoch, unit,
// lane, start, size, due as f64, done). Pure: no I/O.
#pragma once

#include <cstdint>
#include <vector>

#include "mixing/lane.h"
#include "state/field_codec.h"

namespace stoker {

void PutLaneState(const LaneState& state, FieldWriter* w);

// A lane's state of `datasets` datasets and `lanes` lanes (`any_loads`: dealer states of any
// number of lanes, which the caller checks: a state to deal again from, RankState::redeal). Checks
// every count against the bytes left and refuses what no lane holds (loads of another number of
// lanes, positions passed over out of order or behind the dealer, an open unit of no dataset or
// done past its size, a due time that is no number): FieldReader::Fail, a DataError naming the
// file.
// The open units alone (the last field of a lane's state), as a rescale part carries them: each
// of a dataset below `datasets` and a lane below `lanes`.
void PutOpenUnits(const std::vector<OpenUnit>& units, FieldWriter* w);
std::vector<OpenUnit> GetOpenUnits(FieldReader* r, uint64_t datasets, uint64_t lanes);

LaneState GetLaneState(FieldReader* r, uint64_t datasets, uint64_t lanes, bool any_loads = false);

}  // namespace stoker
