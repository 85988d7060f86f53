#include "loader/loader_setup.h"

#include <fmt/format.h>

#include <cmath>
#include <set>
#include <utility>

#include "base/check.h"
#include "loader/document_ids.h"
#include "loader/shared_settings.h"
#include "os/read_queue.h"
#include "shard/discovery.h"
#include "stoker/program/memory.h"

namespace stoker {

void RefuseConfiguration(const std::vector<std::string>& problems) {
  std::string message = "bad loader configuration:";
  for (const auto& p : problems) message += "\n  " + p;
  throw ConfigError(message, /*collective=*/true);
}

std::vector<std::string> RanksWithoutDocuments(const PlannerConfig& p) {
  std::vector<std::string> problems;
  for (uint32_t k = 0; k < p.datasets.size(); ++k) {
    const PlannerDataset& d = p.datasets[k];
    if (d.sizes || !p.schedule.EverPositive(k)) continue;
    for (uint64_t rank = 0; rank < p.world; ++rank) {
      const IndexRange shards = OwnedLogicalShards(p.logical_shards, p.world, rank);
      const uint64_t first = SplitRange(d.docs, p.logical_shards, shards.begin).begin;
      const uint64_t end = SplitRange(d.docs, p.logical_shards, shards.end - 1).end;
      if (end > first) continue;
      problems.push_back(fmt::format(
          "dataset {} has {} documents, too few for {} ranks: rank {} would get none of them "
          "(give it weight 0, use fewer ranks, or deal it: --deal-max-docs)",
          d.name, d.docs, p.world, rank));
      break;
    }
  }
  return problems;
}

std::vector<bool> DealtByRule(const LoaderConfig& config, const CorpusTable& table) {
  std::vector<bool> dealt;
  for (const DatasetInfo& d : table.datasets) {
    dealt.push_back(d.tokens > 0 && d.docs <= config.deal_max_docs);
  }
  return dealt;
}

namespace {

double BatchBytes(const LoaderConfig& c) {
  return static_cast<double>(c.batch_size) * (static_cast<double>(c.seq_len) + 1) * sizeof(int64_t);
}

// The boundary fields a batch carries (stoker/batch.h), as LoaderConfig::boundaries asks: per
// input token 8 bytes of position ids, 4 of segment ids, 4 of loss mask, and at most one offset
// of 4 bytes into cu_seqlens (a document of one token, with its EOS, starts at every other token;
// counted as every token, plus the end).
double BoundaryBytes(const LoaderConfig& c) {
  const BoundaryFields& f = c.boundaries;
  const double per_token = (f.position_ids ? 8.0 : 0) + (f.segment_ids ? 4.0 : 0) +
                           (f.loss_mask ? 4.0 : 0) + (f.cu_seqlens ? 4.0 : 0);
  return per_token * static_cast<double>(c.batch_size) * static_cast<double>(c.seq_len) +
         (f.cu_seqlens ? 4.0 : 0);
}

// The aligned copies of O_DIRECT reads (os/read_queue.h), where they may be made (direct_io on,
// or auto before the corpus says): kDirectKeep kept per read in flight, and the reads in flight,
// at most the batches being read.
double DirectCopyBytes(const LoaderConfig& c) {
  if (c.direct_io == DirectIo::kOff) return 0;
  return static_cast<double>(RankIoDepth(c, 1)) * kDirectKeep +
         static_cast<double>(BatchesBeingRead(c)) * BatchBytes(c);
}

// What a rank's loader holds besides the corpus table and its state: the batches of int64 tokens
// and their boundary fields (prefetch of them finished, the ones being read, one the trainer
// holds), the reads' own buffers of the file's tokens (at most as large as the batches being
// read) and the offset cache. In double: the factors are as typed and may overflow 64 bits.
double BufferBytes(const LoaderConfig& c) {
  const double being_read = static_cast<double>(BatchesBeingRead(c));
  const double batches = static_cast<double>(c.prefetch) + 1 + being_read;
  return (batches + being_read) * BatchBytes(c) + batches * BoundaryBytes(c) +
         static_cast<double>(c.offset_cache_bytes) + DirectCopyBytes(c);
}

// The most the loader may hold per rank, and where that figure comes from.
MemoryBudget LoaderBudget(const LoaderConfig& c, uint64_t ranks_on_node) {
  if (c.max_memory_bytes > 0) return {c.max_memory_bytes, "max_memory_bytes"};
  return DefaultMemoryBudget(ranks_on_node);
}

std::string BufferBreakdown(const LoaderConfig& c) {
  const uint64_t being_read = BatchesBeingRead(c);
  return fmt::format(
      "{} batches of --batch-size {} x (--seq-len {} + 1) int64 tokens (--prefetch {} finished, "
      "1 with the trainer, {} being read for --read-ahead {} and as many again for their reads' "
      "buffers){}, an offset cache of {}{}",
      static_cast<uint64_t>(c.prefetch) + 1 + 2 * being_read, c.batch_size, c.seq_len, c.prefetch,
      being_read, FormatBytes(static_cast<double>(c.read_ahead_bytes)),
      c.boundaries.Any() ? fmt::format(", the boundary fields of {} of them ({} each)",
                                       static_cast<uint64_t>(c.prefetch) + 1 + being_read,
                                       FormatBytes(BoundaryBytes(c)))
                         : "",
      FormatBytes(static_cast<double>(c.offset_cache_bytes)),
      c.direct_io == DirectIo::kOff
          ? ""
          : fmt::format(" and {} for the aligned copies of --direct-io {}",
                        FormatBytes(DirectCopyBytes(c)), DirectIoName(c.direct_io)));
}

// A rank's state: a cursor per owned logical shard and dataset, held four times (the planner's,
// its look-ahead's, the state after the last batch delivered, a snapshot being saved), and the
// planner's list of the shards with documents; for each dataset it deals (DealtByRule), every
// document's size, and per rank a load in each of its dealer states (the next unit's and up to
// three earlier ones, LaneState::earlier), held four times.
double StateBytes(const LoaderConfig& config, const CorpusTable& table, uint64_t world) {
  const auto datasets = static_cast<double>(table.datasets.size());
  const double owned =
      std::ceil(static_cast<double>(config.logical_shards) / static_cast<double>(world));
  double bytes = owned * datasets * (4 * sizeof(ShardCursor) + sizeof(uint64_t));
  const std::vector<bool> dealt = DealtByRule(config, table);
  for (size_t d = 0; d < dealt.size(); ++d) {
    if (!dealt[d]) continue;
    bytes += static_cast<double>(table.datasets[d].docs) * sizeof(uint64_t) +
             4.0 * 4.0 * static_cast<double>(world) * sizeof(uint64_t);
  }
  return bytes;
}

// Buffers and state against the budget of a rank among `ranks_on_node`: Problems() checked the
// buffers alone, for one process, before the corpus told how many datasets the state holds.
// Budgets may differ between ranks (nodes of other sizes): the caller fails together.
void CheckMemory(const LoaderConfig& config, const CorpusTable& table, uint64_t world,
                 uint64_t ranks_on_node) {
  const auto [budget, why] = LoaderBudget(config, ranks_on_node);
  const double state = StateBytes(config, table, world);
  const double bytes = BufferBytes(config) + state;
  if (bytes <= static_cast<double>(budget)) return;
  RefuseConfiguration({fmt::format(
      "the loader would hold {} per rank ({}, and a state of {} for "
      "--logical-shards {} over {} ranks x {} datasets, with the document sizes and dealers' "
      "loads of those of at most --deal-max-docs {} documents), above the {} it may hold "
      "({})",
      FormatBytes(bytes), BufferBreakdown(config), FormatBytes(state), config.logical_shards, world,
      table.datasets.size(), config.deal_max_docs, FormatBytes(static_cast<double>(budget)), why)});
}

}  // namespace

std::vector<std::string> LoaderConfig::Problems() const {
  std::vector<std::string> problems;
  if (data.empty()) problems.push_back("no corpus folder (--data)");
  if (seq_len == 0) problems.push_back("--seq-len must be at least 1");
  if (batch_size == 0) problems.push_back("--batch-size must be at least 1");
  constexpr uint64_t kMaxBatchTokens = uint64_t{1} << 31;  // 16 GiB of int64 per batch
  if (seq_len >= kMaxBatchTokens ||
      (batch_size > 0 && seq_len > 0 && batch_size > kMaxBatchTokens / (seq_len + 1))) {
    problems.push_back(
        fmt::format("--batch-size {} x (--seq-len {} + 1) tokens per batch is "
                    "above the limit of 2^31",
                    batch_size, seq_len));
  }
  if (logical_shards == 0) problems.push_back("--logical-shards must be at least 1");
  if (logical_shards > kMaxLogicalShards) {
    problems.push_back(fmt::format("--logical-shards {} is above the maximum of {}", logical_shards,
                                   kMaxLogicalShards));
  }
  if (!resume_from.empty() && !resume_state.empty()) {
    problems.push_back("resume_from and resume_state are both given: resume from one of them");
  }
  if (prefetch == 0) problems.push_back("--prefetch must be at least 1");
  if (io_depth > kMaxIoDepth) {
    problems.push_back(
        fmt::format("--io-depth {} is above the maximum of {}", io_depth, kMaxIoDepth));
  }
  if (max_open_files == 0) problems.push_back("max_open_files must be at least 1");
  const auto [budget, why] = LoaderBudget(*this, 1);
  if (const double bytes = BufferBytes(*this); bytes > static_cast<double>(budget)) {
    problems.push_back(fmt::format(
        "the loader would hold {} per rank ({}), above the {} it may "
        "hold ({})",
        FormatBytes(bytes), BufferBreakdown(*this), FormatBytes(static_cast<double>(budget)), why));
  }
  if (eos_id && *eos_id < 0) problems.push_back(fmt::format("--eos-id {} is negative", *eos_id));
  if (bos_id && *bos_id < 0) problems.push_back(fmt::format("--bos-id {} is negative", *bos_id));
  if (eos_id && bos_id && *eos_id == *bos_id) {
    problems.push_back(SameBosAndEos(*bos_id, "--eos-id"));
  }
  for (const auto& [name, weight] : weights) {
    if (!(weight >= 0))
      problems.push_back(fmt::format("weight of {} is {}; weights must be >= 0", name, weight));
  }
  if (!weight_schedule.empty()) {
    if (!weights.empty()) {
      problems.push_back(
          "both weights and a weight schedule: give one (--weights is the "
          "schedule of one entry)");
    }
    for (const std::string& p : WeightScheduleProblems(weight_schedule)) {
      problems.push_back("--weights-schedule: " + p);
    }
  }
  if ((data_parallel_comm == MPI_COMM_NULL) != (replica_comm == MPI_COMM_NULL)) {
    problems.push_back("data_parallel_comm and replica_comm go together: give both or neither");
  }
  if (!layout.empty() && data_parallel_comm != MPI_COMM_NULL) {
    problems.push_back("both a layout and the communicators of one: give one");
  }
  if (!layout.empty()) {
    try {
      ParseLayout(layout);
    } catch (const ConfigError& e) {
      problems.push_back(e.what());
    }
  }
  return problems;
}

void LoaderConfig::SetMixing(const std::string& weights_text, const std::string& schedule_value) {
  if (!weights_text.empty() && !schedule_value.empty()) {
    throw ConfigError(
        "--weights and --weights-schedule exclude each other (--weights is the "
        "schedule of one entry)");
  }
  weights = ParseWeights(weights_text);
  weight_schedule =
      schedule_value.empty() ? WeightSchedule{} : WeightScheduleArgument(schedule_value);
}

uint64_t BatchesBeingRead(const LoaderConfig& config) {
  const double batch = BatchBytes(config);
  const double fit = batch > 0 ? static_cast<double>(config.read_ahead_bytes) / batch : 1;
  return std::clamp<uint64_t>(static_cast<uint64_t>(std::min(fit, 1e12)), 1,
                              RankIoDepth(config, 1));
}

uint32_t RankIoDepth(const LoaderConfig& config, uint64_t ranks_on_node) {
  if (config.io_depth > 0) return config.io_depth;
  const uint64_t share = LoaderConfig::kNodeIoDepth / std::max<uint64_t>(ranks_on_node, 1);
  return static_cast<uint32_t>(std::max<uint64_t>(share, LoaderConfig::kMinRankIoDepth));
}

std::vector<double> ResolveWeights(const std::map<std::string, double>& weights,
                                   const CorpusTable& table, const std::string& what,
                                   std::vector<std::string>* problems) {
  const size_t problems_before = problems->size();
  std::set<std::string> names;
  for (const auto& d : table.datasets) names.insert(d.name);
  for (const auto& [name, weight] : weights) {
    if (!names.count(name)) {
      problems->push_back(
          fmt::format("{} names dataset {}, which corpus {} does not have "
                      "(it has: {})",
                      what, name, table.root, fmt::join(names, ", ")));
    }
  }
  std::vector<double> resolved;
  double total = 0;
  for (const auto& d : table.datasets) {
    double w = static_cast<double>(d.tokens);
    if (!weights.empty()) {
      const auto it = weights.find(d.name);
      w = it == weights.end() ? 0.0 : it->second;
    }
    if (!(w >= 0) || !std::isfinite(w)) {
      problems->push_back(
          fmt::format("{}: weight of {} is {}; weights must be finite and >= 0", what, d.name, w));
      w = 0;
    }
    if (w > 0 && d.tokens == 0) {
      problems->push_back(
          fmt::format("{}: dataset {} has weight {} but no tokens: its {} documents "
                      "are all empty (give it weight 0)",
                      what, d.name, w, d.docs));
    }
    resolved.push_back(w);
    total += w;
  }
  if (problems->size() == problems_before && !(total > 0)) {
    problems->push_back(what + ": every dataset has weight 0 (or no tokens): nothing to read");
  } else if (problems->size() == problems_before && !std::isfinite(total)) {
    problems->push_back(what + ": the weights sum to more than a double holds; scale them down");
  }
  if (problems->size() > problems_before) return {};
  return MixSchedule::Normalized(std::move(resolved));
}

MixSchedule ResolveSchedule(const LoaderConfig& config, const CorpusTable& table) {
  std::vector<std::string> problems;
  const WeightSchedule schedule = config.weight_schedule.empty()
                                      ? WeightSchedule{{.step = 0, .weights = config.weights}}
                                      : config.weight_schedule;
  std::vector<MixEntry> entries;
  for (size_t k = 0; k < schedule.size(); ++k) {
    const std::string what =
        config.weight_schedule.empty()
            ? std::string("--weights")
            : fmt::format("--weights-schedule entry {} (step {})", k + 1, schedule[k].step);
    entries.push_back({.step = schedule[k].step,
                       .ramp = schedule[k].ramp,
                       .weights = ResolveWeights(schedule[k].weights, table, what, &problems)});
  }
  if (!problems.empty()) RefuseConfiguration(problems);
  return MixSchedule(std::move(entries));
}

LoaderSetup SetUpLoader(const mpi::Comm& comm, LoaderConfig* settings) {
  const LoaderConfig& config = *settings;
  // The memory budget is the node's: ranks on nodes of other sizes may disagree.
  mpi::FailTogether(comm, [&] {
    if (auto problems = config.Problems(); !problems.empty()) RefuseConfiguration(problems);
  });
  RequireSharedSettings(comm, config);
  LoaderSetup setup;
  setup.table = DiscoverCorpus(comm, config.data, &setup.arrays);
  WarnOfShardsWithoutChecksum(comm, setup.table);
  const auto ranks_on_node = static_cast<uint64_t>(comm.RanksOnThisNode());
  settings->io_depth = RankIoDepth(config, ranks_on_node);
  mpi::FailTogether(comm, [&] {
    CheckMemory(config, setup.table, static_cast<uint64_t>(comm.size()), ranks_on_node);
  });
  if (static_cast<uint64_t>(comm.size()) > config.logical_shards) {
    RefuseConfiguration(
        {config.resume_from.empty()
             ? fmt::format("{} ranks but only {} logical shards: every rank needs at least "
                           "one (raise --logical-shards)",
                           comm.size(), config.logical_shards)
             : fmt::format("{} ranks but only {} logical shards: checkpoint {} was saved with "
                           "{} logical shards, so resume it on at most {} ranks",
                           comm.size(), config.logical_shards, config.resume_from,
                           config.logical_shards, config.logical_shards)});
  }
  // Each rank resolves its own settings (they are compared next, by meaning): together.
  mpi::FailTogether(comm, [&] {
    setup.planner.schedule = ResolveSchedule(config, setup.table);
    ResolveDocumentIds(config, comm.rank(), &setup);
  });
  RequireSameResolvedSettings(comm, setup.table, setup.eos_id, &setup.planner.schedule);
  PlannerConfig& p = setup.planner;
  p.seed = config.seed;
  p.logical_shards = config.logical_shards;
  p.world = static_cast<uint64_t>(comm.size());
  p.rank = static_cast<uint64_t>(comm.rank());
  p.row_tokens = config.seq_len + 1;
  p.bos = setup.bos_id.has_value();
  p.rows = config.batch_size;
  for (const DatasetInfo& info : setup.table.datasets) {
    p.datasets.push_back({info.name, info.docs, info.tokens});
  }
  return setup;
}

MixSchedule ScheduleSettingWeights(const PlannerConfig& planner, const CorpusTable& table,
                                   uint64_t step, const std::map<std::string, double>& weights) {
  std::vector<std::string> problems;
  std::vector<double> resolved = ResolveWeights(weights, table, "SetWeights", &problems);
  if (problems.empty()) {
    PlannerConfig changed = planner;
    changed.schedule = planner.schedule.SetFrom(step, std::move(resolved));
    problems = RanksWithoutDocuments(changed);
    if (problems.empty()) return changed.schedule;
  }
  throw ConfigError(
      fmt::format("SetWeights refused at step {}:\n  {}", step, fmt::join(problems, "\n  ")));
}

bool ReadsDirect(const LoaderConfig& config, const CorpusTable& table) {
  if (config.direct_io != DirectIo::kAuto) return config.direct_io == DirectIo::kOn;
  uint64_t bytes = 0;
  for (const ShardInfo& shard : table.shards) bytes += shard.file_bytes;
  return bytes > UsableMemoryBytes();
}

}  // namespace stoker
