#include "state/checkpoint_codec.h"

#include <cmath>

#include "base/check.h"
#include "state/field_codec.h"
#include "state/lane_codec.h"

namespace stoker {

namespace {

constexpr std::string_view kCheckpointMagic = "STOKERCK";
constexpr const char* kCheckpointKind = "stoker checkpoint";

// A cursor is coded against the previous shard's cursor of the same dataset. Short form, one
// byte in the common case: an even varint 2 * zigzag(position difference), when the epoch is the
// same and no document is cut. Long form: the varint 1, then zigzag epoch difference, zigzag
// position difference and the offset.
void PutCursors(const RankState& state, FieldWriter* w) {
  const uint64_t shards = state.shards.size();
  for (uint64_t d = 0; d < state.datasets; ++d) {
    ShardCursor previous;
    for (uint64_t j = 0; j < shards; ++j) {
      const ShardCursor& c = state.cursors[j * state.datasets + d];
      const auto position = static_cast<int64_t>(c.position - previous.position);
      // The short form has 63 bits for zigzag(difference): a difference beyond +-2^62 (possible
      // only in a file written by hand, positions are document counts) takes the long form.
      if (c.epoch == previous.epoch && c.offset == 0 && ZigZag(position) >> 63 == 0) {
        w->U(ZigZag(position) << 1);
      } else {
        w->U(1);
        w->S(static_cast<int64_t>(c.epoch - previous.epoch));
        w->S(position);
        w->U(c.offset);
      }
      previous = c;
    }
  }
}

void GetCursors(FieldReader* r, RankState* state) {
  const uint64_t shards = state->shards.size();
  // Every cursor takes at least 1 byte: never allocate more cursors than the bytes can hold.
  if (shards > 0 && state->datasets > r->left() / shards) r->Fail("more cursors than bytes");
  state->cursors.resize(shards * state->datasets);
  for (uint64_t d = 0; d < state->datasets; ++d) {
    ShardCursor previous;
    for (uint64_t j = 0; j < shards; ++j) {
      ShardCursor c = previous;
      c.offset = 0;
      const uint64_t tag = r->U();
      if (tag % 2 == 0) {
        c.position = previous.position + static_cast<uint64_t>(UnZigZag(tag >> 1));
      } else if (tag == 1) {
        c.epoch = previous.epoch + static_cast<uint64_t>(r->S());
        c.position = previous.position + static_cast<uint64_t>(r->S());
        c.offset = r->U();
      } else {
        r->Fail("a cursor of an unknown form");
      }
      state->cursors[j * state->datasets + d] = c;
      previous = c;
    }
  }
}

void PutIdentity(const OrderIdentity& id, FieldWriter* w) {
  w->Str(id.corpus_fingerprint);
  w->U(id.seed);
  w->U(id.logical_shards);
  w->U(id.seq_len);
  w->S(id.eos_id);
  w->U(id.bos_id.has_value());
  w->S(id.bos_id.value_or(0));
  w->U(id.datasets.size());
  for (const auto& name : id.datasets) w->Str(name);
}

// Weights as the loader normalizes them: each in [0, 1], summing to 1 (within rounding).
bool IsNormalized(const std::vector<double>& weights) {
  double total = 0;
  for (double w : weights) {
    if (!(w >= 0 && w <= 1)) return false;
    total += w;
  }
  return total > 0.999 && total < 1.001;
}

// Per entry: step, ramp, one weight per dataset.
void PutSchedule(const MixSchedule& schedule, FieldWriter* w) {
  w->U(schedule.entries().size());
  for (const MixEntry& e : schedule.entries()) {
    w->U(e.step);
    w->U(e.ramp);
    for (double weight : e.weights) w->D(weight);
  }
}

MixSchedule GetSchedule(FieldReader* r, uint64_t datasets) {
  std::vector<MixEntry> entries(r->Count(2 + 8 * datasets));
  for (size_t k = 0; k < entries.size(); ++k) {
    MixEntry& e = entries[k];
    e.step = r->U();
    const uint64_t ramp = r->U();
    e.ramp = ramp == 1;
    for (uint64_t d = 0; d < datasets; ++d) e.weights.push_back(r->D());
    if (ramp > 1 || (k == 0 && (e.step != 0 || e.ramp)) ||
        (k > 0 && e.step <= entries[k - 1].step) || !IsNormalized(e.weights)) {
      r->Fail(fmt::format("entry {} of the weight schedule", k + 1));
    }
  }
  if (entries.empty()) r->Fail("a weight schedule without entries");
  return MixSchedule(std::move(entries));
}

// A run identity as a version 3 file holds it: 32 lowercase hex digits.
bool IsRunId(std::string_view run) {
  return run.size() == 32 && run.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

OrderIdentity GetIdentity(FieldReader* r) {
  OrderIdentity id;
  id.corpus_fingerprint = r->Str();
  id.seed = r->U();
  id.logical_shards = r->U();
  id.seq_len = r->U();
  id.eos_id = r->S();
  const bool has_bos = r->U() != 0;
  const int64_t bos = r->S();
  if (has_bos) id.bos_id = bos;
  id.datasets.resize(r->Count(1));
  for (auto& name : id.datasets) name = r->Str();
  return id;
}

}  // namespace

uint32_t CheckpointVersion(const std::string& run) {
  return run.empty() ? 2 : kCheckpointFormatVersion;
}

namespace {

// The clock (format 5): the tokens of a global step, the base's step and what each dataset had
// earned there.
void PutClock(const RankState& s, FieldWriter* w) {
  w->U(s.step_tokens);
  w->U(s.clock.step);
  w->U(s.clock.earned.size());
  for (double earned : s.clock.earned) w->D(earned);
}

void GetClock(FieldReader* r, RankState* s) {
  s->step_tokens = r->U();
  s->clock.step = r->U();
  s->clock.earned.resize(r->Count(8));
  for (double& earned : s->clock.earned) {
    earned = r->D();
    if (!(earned >= 0) || std::isinf(earned))
      r->Fail("a dataset's earned tokens that are no count");
  }
  if (!s->clock.earned.empty() && s->clock.earned.size() != s->datasets) {
    r->Fail("a clock of another number of datasets");
  }
  if (s->clock.step > s->step || (s->step_tokens == 0 && !s->clock.earned.empty())) {
    r->Fail("a clock's base after the state's step or without step tokens");
  }
}

// Per dataset: (version 1 to 4: the started tokens, version 2 to 4: the deficit, which the lanes
// replaced,) the interleaving's cycle and index.
void GetPerDataset(FieldReader* r, uint32_t version, RankState* s) {
  s->interleave.resize(s->datasets);
  for (uint64_t d = 0; d < s->datasets; ++d) {
    if (version < 5) s->lane.started[d] = r->U();
    if (version >= 2 && version < 5 && !std::isfinite(r->D())) {
      r->Fail("a mixing deficit that is not a number");
    }
    s->interleave[d].cycle = r->U();
    s->interleave[d].index = r->U();
  }
}

}  // namespace

std::string EncodeCheckpoint(const RankCheckpoint& c) {
  const RankState& s = c.state;
  STOKER_ASSERT(s.lane.started.size() == s.datasets && s.lane.dealers.size() == s.datasets &&
                    s.interleave.size() == s.datasets && c.schedule.datasets() == s.datasets,
                "a checkpoint of {} datasets", s.datasets);
  STOKER_ASSERT(c.run.empty() || IsRunId(c.run), "a run identity \"{}\"", c.run);
  STOKER_ASSERT(c.layout.empty() || !c.run.empty(), "a layout without a run identity");
  const uint32_t version = CheckpointVersion(c.run);
  STOKER_ASSERT(version == kCheckpointFormatVersion || (s.lane.open.empty() && s.step_tokens == 0),
                "a state of lanes without a run identity");
  FieldWriter payload;
  PutIdentity(c.identity, &payload);
  payload.U(c.world);
  payload.U(c.rank);
  if (version >= 3) payload.Str(c.run);
  if (version >= 4) payload.Str(c.layout);
  for (double w : c.weights) payload.D(w);
  PutSchedule(c.schedule, &payload);
  payload.U(s.step);
  payload.U(s.generation);
  payload.U(s.shards.begin);
  payload.U(s.shards.end);
  for (uint64_t d = 0; d < s.datasets; ++d) {
    if (version < 5) {
      payload.U(s.lane.started[d]);
      payload.D(0.0);  // the deficit of version 2 to 4
    }
    payload.U(s.interleave[d].cycle);
    payload.U(s.interleave[d].index);
  }
  PutCursors(s, &payload);
  payload.U(s.unfinished.size());
  for (const auto& u : s.unfinished) {
    payload.U(u.dataset);
    payload.U(u.shard);
  }
  if (version >= 5) {
    PutClock(s, &payload);
    PutLaneState(s.lane, &payload);
    payload.U(s.redeal.size());
    for (const auto& positions : s.redeal) {
      payload.U(positions.size());
      for (uint64_t p : positions) payload.U(p);
    }
  }
  return FrameFile(kCheckpointMagic, version, std::move(payload.bytes()));
}

RankCheckpoint DecodeCheckpoint(std::string_view bytes, const std::string& source) {
  uint32_t version = 0;
  FieldReader r = UnframeFile(bytes, kCheckpointMagic, 1, kCheckpointFormatVersion, source,
                              kCheckpointKind, &version);
  RankCheckpoint c;
  c.identity = GetIdentity(&r);
  c.world = r.U();
  c.rank = r.U();
  if (c.world == 0 || c.rank >= c.world) r.Fail(fmt::format("rank {} of {}", c.rank, c.world));
  if (version >= 3) {
    c.run = r.Str();
    if (!IsRunId(c.run)) r.Fail("a run identity that is not 32 hex digits");
  }
  if (version >= 4) {
    c.layout = r.Str();
    if (c.layout.empty() && version == 4) r.Fail("an empty layout");
  }
  const uint64_t datasets = c.identity.datasets.size();
  for (uint64_t d = 0; d < datasets; ++d) c.weights.push_back(r.D());
  if (version >= 2) {
    c.schedule = GetSchedule(&r, datasets);
  } else if (IsNormalized(c.weights)) {
    c.schedule = MixSchedule::Constant(c.weights);
  } else {
    r.Fail("weights that do not sum to 1");
  }
  RankState& s = c.state;
  s.step = r.U();
  s.generation = r.U();
  const uint64_t begin = r.U();
  const uint64_t end = r.U();
  if (begin > end || end > c.identity.logical_shards) {
    r.Fail(fmt::format("logical shards [{}, {}) of {}", begin, end, c.identity.logical_shards));
  }
  const uint64_t generation = s.generation;
  const uint64_t step = s.step;
  s = InitialRankState(datasets, 1, 1, 0);  // the per-dataset parts; shards and cursors next
  s.step = step;
  s.generation = generation;
  s.shards = {begin, end};
  GetPerDataset(&r, version, &s);
  GetCursors(&r, &s);
  s.unfinished.resize(r.Count(2));
  for (auto& u : s.unfinished) {
    const uint64_t dataset = r.U();  // checked before it is narrowed to 32 bits
    u.dataset = static_cast<uint32_t>(dataset);
    u.shard = r.U();
    if (dataset >= datasets || !s.shards.contains(u.shard)) r.Fail("an unfinished document");
  }
  if (version >= 5) {
    GetClock(&r, &s);
    s.lane = GetLaneState(&r, datasets, c.world, /*any_loads=*/true);
    s.redeal.resize(r.Count(1));
    if (!s.redeal.empty() && s.redeal.size() != datasets) r.Fail("positions to deal again");
    for (uint64_t d = 0; d < s.redeal.size(); ++d) {
      s.redeal[d].resize(r.Count(1));
      for (uint64_t& p : s.redeal[d]) p = r.U();
    }
    for (uint64_t d = 0; d < datasets; ++d) {  // the dealing's lanes: this run's, or the old
      const uint64_t loads = s.lane.dealers[d].loads.size();
      const uint64_t old = s.redeal.empty() ? 0 : s.redeal[d].size();
      if (old > 0 ? loads != old : loads != 0 && loads != c.world) {
        r.Fail(fmt::format("a dealer state of {} lanes for dataset {}", loads, d));
      }
    }
  }
  if (!r.done()) r.Fail("bytes after the end of the state");
  return c;
}

std::string EncodeMixSchedule(const MixSchedule& schedule) {
  FieldWriter w;
  PutSchedule(schedule, &w);
  return std::move(w.bytes());
}

MixSchedule DecodeMixSchedule(std::string_view bytes, uint64_t datasets,
                              const std::string& source) {
  FieldReader r(bytes, source, kCheckpointKind);
  MixSchedule schedule = GetSchedule(&r, datasets);
  if (!r.done()) r.Fail("bytes after the weight schedule");
  return schedule;
}

std::vector<std::string> IdentityDifferences(const OrderIdentity& saved, const OrderIdentity& now) {
  std::vector<std::string> out;
  auto differ = [&](const char* what, const auto& a, const auto& b) {
    if (a != b) out.push_back(fmt::format("{}: checkpoint {}, now {}", what, a, b));
  };
  differ("corpus fingerprint", saved.corpus_fingerprint, now.corpus_fingerprint);
  differ("datasets", fmt::format("{}", fmt::join(saved.datasets, ",")),
         fmt::format("{}", fmt::join(now.datasets, ",")));
  differ("seed", saved.seed, now.seed);
  differ("logical shards", saved.logical_shards, now.logical_shards);
  differ("seq_len", saved.seq_len, now.seq_len);
  differ("eos_id", saved.eos_id, now.eos_id);
  const auto bos = [](const std::optional<int64_t>& b) {
    return b ? fmt::format("{}", *b) : std::string("none");
  };
  differ("bos_id", bos(saved.bos_id), bos(now.bos_id));
  return out;
}

}  // namespace stoker
