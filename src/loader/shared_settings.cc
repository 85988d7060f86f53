#include "loader/shared_settings.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "base/check.h"
#include "os/host.h"
#include "shard/corpus_view.h"

namespace stoker {

namespace {

std::string Text(const std::optional<int64_t>& id, const char* none) {
  return id ? std::to_string(*id) : none;
}

// The normalized schedule, as "0: a=0.5, b=0.5; ~100: a=1, b=0" to 12 significant digits.
std::string ScheduleText(const CorpusTable& table, const MixSchedule& schedule) {
  std::vector<std::string> entries;
  for (const MixEntry& e : schedule.entries()) {
    std::vector<std::string> weights;
    for (size_t d = 0; d < e.weights.size(); ++d) {
      weights.push_back(fmt::format("{}={:.12g}", table.datasets[d].name, e.weights[d]));
    }
    entries.push_back(fmt::format("{}{}: {}", e.ramp ? "~" : "", e.step, fmt::join(weights, ", ")));
  }
  return fmt::format("{}", fmt::join(entries, "; "));
}

// Every rank's schedule takes rank 0's weights (the same entries: their texts agree).
void TakeRankZeroWeights(const mpi::Comm& comm, MixSchedule* schedule) {
  std::vector<MixEntry> entries = schedule->entries();
  std::string bytes;
  for (const MixEntry& e : entries) {
    bytes.append(reinterpret_cast<const char*>(e.weights.data()),
                 e.weights.size() * sizeof(double));
  }
  comm.Broadcast(&bytes, 0);
  STOKER_CHECK(bytes.size() == entries.size() * schedule->datasets() * sizeof(double),
               InternalError, "rank 0's weights are {} bytes", bytes.size());
  size_t at = 0;
  for (MixEntry& e : entries) {
    std::memcpy(e.weights.data(), bytes.data() + at, e.weights.size() * sizeof(double));
    at += e.weights.size() * sizeof(double);
  }
  *schedule = MixSchedule(std::move(entries));
}

std::string BoundaryText(const BoundaryFields& f) {
  std::vector<std::string> fields;
  if (f.position_ids) {
    fields.push_back(f.positions == PositionIds::kContinue ? "position_ids (continue)"
                                                           : "position_ids (restart)");
  }
  if (f.cu_seqlens) fields.push_back("cu_seqlens");
  if (f.segment_ids) fields.push_back("segment_ids");
  if (f.loss_mask) fields.push_back("loss_mask");
  return fields.empty() ? "none" : fmt::format("{}", fmt::join(fields, ", "));
}

// The corpus folder, seen from each rank's node: a folder missing on some nodes (an unmounted file
// system, a copy not staged) is named with the first rank and host that miss it. Missing on
// every rank, discovery names it (rank 0 lists the folder for all).
void RequireCorpusFolder(const mpi::Comm& comm, const std::string& data) {
  struct stat st {};
  const bool found = ::stat(data.c_str(), &st) == 0;
  const std::string why = found ? "not a folder" : std::strerror(errno);
  const bool ok = found && S_ISDIR(st.st_mode);
  const uint64_t failing = comm.Sum(ok ? 0 : 1);
  if (failing == 0 || failing == static_cast<uint64_t>(comm.size())) return;
  mpi::FailTogether(comm, [&] {
    STOKER_CHECK(ok, ConfigError,
                 "rank {} (host {}) cannot use corpus folder {}: {} ({} of {} ranks cannot; the "
                 "others can)",
                 comm.rank(), HostName(), data, why, failing, comm.size());
  });
}

}  // namespace

std::vector<mpi::Setting> SharedSettings(const LoaderConfig& c) {
  return {{"seed", std::to_string(c.seed)},
          {"logical_shards", std::to_string(c.logical_shards)},
          {"deal_max_docs", std::to_string(c.deal_max_docs)},
          {"seq_len", std::to_string(c.seq_len)},
          {"bos_id", Text(c.bos_id, "none")},
          {"boundaries", BoundaryText(c.boundaries)},
          {"resume_from", c.resume_from.empty() ? "none (step 0)" : c.resume_from},
          {"resume_state", c.resume_state.empty() ? "none" : "given"}};
}

void RequireSharedSettings(const mpi::Comm& comm, const LoaderConfig& config) {
  mpi::RequireAgreement(comm, SharedSettings(config), "loader settings differ between ranks");
  RequireCorpusFolder(comm, config.data);
  RequireSameCorpusView(comm, config.data);
}

void RequireSameResolvedSettings(const mpi::Comm& comm, const CorpusTable& table, int64_t eos_id,
                                 MixSchedule* schedule) {
  mpi::RequireAgreement(comm,
                        {{"eos_id", std::to_string(eos_id)},
                         {"weights / weight_schedule, normalized", ScheduleText(table, *schedule)}},
                        "loader settings differ between ranks once the corpus resolves them");
  TakeRankZeroWeights(comm, schedule);
}

void WarnOfShardsWithoutChecksum(const mpi::Comm& comm, const CorpusTable& table) {
  if (comm.rank() != 0) return;
  const auto without = std::count_if(table.shards.begin(), table.shards.end(),
                                     [](const ShardInfo& s) { return !s.checksum; });
  if (without == 0) return;
  spdlog::warn(
      "{} of {} shards of corpus {} carry no content checksum (written before stoker recorded "
      "one): ranks that see other tokens behind the same names and sizes are not told apart, nor "
      "is a shard rewritten at the same sizes since a save; `stoker verify --record {}` adds them",
      without, table.shards.size(), table.root, table.root);
}

void RequireSameWeights(const mpi::Comm& comm, uint64_t step,
                        const std::map<std::string, double>& weights) {
  mpi::RequireAgreement(
      comm,
      {{"called after step", std::to_string(step)},
       {"weights", weights.empty() ? "by tokens" : FormatWeights(weights)}},
      "SetWeights is collective: every rank calls it after the same step with the same weights, "
      "and these differ");
}

}  // namespace stoker
