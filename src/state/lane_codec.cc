#include "state/lane_codec.h"

#include <algorithm>
#include <cmath>

namespace stoker {

namespace {

void PutDealerState(const DealerState& s, FieldWriter* w) {
  w->U(s.position);
  w->U(s.start);
  w->U(s.loads.size());
  if (!s.loads.empty()) {
    const uint64_t least = *std::min_element(s.loads.begin(), s.loads.end());
    w->U(least);
    for (uint64_t load : s.loads) w->U(load - least);
  }
  w->U(s.skip.size());
  uint64_t previous = s.position;
  for (uint64_t p : s.skip) {
    w->U(p - previous);
    previous = p;
  }
}

DealerState GetDealerState(FieldReader* r, uint64_t lanes) {
  DealerState s;
  s.position = r->U();
  s.start = r->U();
  const uint64_t loads = r->Count(1);
  if (loads != 0 && lanes != 0 && loads != lanes) {  // lanes 0: any
    r->Fail("a dealer state of " + std::to_string(loads) + " lanes, not " + std::to_string(lanes));
  }
  if (loads > 0) {
    const uint64_t least = r->U();
    s.loads.resize(loads);
    for (uint64_t& load : s.loads) {
      load = least + r->U();
      if (load < least) r->Fail("a dealer's load beyond 2^64");
    }
  }
  s.skip.resize(r->Count(1));
  uint64_t previous = s.position;
  for (size_t k = 0; k < s.skip.size(); ++k) {
    const uint64_t step = r->U();
    if ((k > 0 && step == 0) || previous + step < previous) {
      r->Fail("positions to pass over that do not increase");
    }
    s.skip[k] = previous += step;
  }
  return s;
}

}  // namespace

void PutLaneState(const LaneState& state, FieldWriter* w) {
  for (size_t d = 0; d < state.dealers.size(); ++d) {
    PutDealerState(state.dealers[d], w);
    w->U(d < state.started.size() ? state.started[d] : 0);
    const size_t earlier = d < state.earlier.size() ? state.earlier[d].size() : 0;
    w->U(earlier);
    for (size_t k = 0; k < earlier; ++k) PutDealerState(state.earlier[d][k], w);
  }
  PutOpenUnits(state.open, w);
}

void PutOpenUnits(const std::vector<OpenUnit>& units, FieldWriter* w) {
  w->U(units.size());
  for (const OpenUnit& open : units) {
    const Dealt& u = open.unit.dealt;
    w->U(open.unit.dataset);
    for (uint64_t v : {u.position, u.epoch, u.unit, uint64_t{u.lane}, u.start, u.size}) w->U(v);
    w->D(open.unit.due);
    w->U(open.done);
  }
}

LaneState GetLaneState(FieldReader* r, uint64_t datasets, uint64_t lanes, bool any_loads) {
  const uint64_t loads_of = any_loads ? 0 : lanes;
  LaneState state;
  // Every dataset takes at least 5 bytes (position, start, loads, skips, started, earlier).
  if (datasets > r->left() / 5) r->Fail("more datasets than bytes");
  state.dealers.resize(datasets);
  state.started.resize(datasets);
  state.earlier.resize(datasets);
  for (uint64_t d = 0; d < datasets; ++d) {
    state.dealers[d] = GetDealerState(r, loads_of);
    state.started[d] = r->U();
    state.earlier[d].resize(r->Count(4));
    for (DealerState& earlier : state.earlier[d]) earlier = GetDealerState(r, loads_of);
  }
  state.open = GetOpenUnits(r, datasets, lanes);
  return state;
}

std::vector<OpenUnit> GetOpenUnits(FieldReader* r, uint64_t datasets, uint64_t lanes) {
  std::vector<OpenUnit> units(r->Count(16));  // 8 varints and an f64
  for (OpenUnit& open : units) {
    open.unit.dataset = static_cast<uint32_t>(std::min<uint64_t>(r->U(), UINT32_MAX));
    if (open.unit.dataset >= datasets) r->Fail("an open unit of no dataset");
    Dealt& u = open.unit.dealt;
    u.position = r->U();
    u.epoch = r->U();
    u.unit = r->U();
    const uint64_t lane = r->U();
    if (lane >= lanes) r->Fail("an open unit of lane " + std::to_string(lane));
    u.lane = static_cast<uint32_t>(lane);
    u.start = r->U();
    u.size = r->U();
    open.unit.due = r->D();
    if (std::isnan(open.unit.due)) r->Fail("an open unit due at no time");
    open.done = r->U();
    if (open.done >= u.size) r->Fail("an open unit done past its size");
  }
  return units;
}

}  // namespace stoker
