#include "import/import.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>

#include "base/bytes.h"
#include "base/check.h"
#include "core/token_type.h"
#include "import/import_input.h"
#include "import/mds_input.h"
#include "import/megatron_input.h"
#include "import/token_file_input.h"
#include "os/files.h"
#include "stoker/log.h"
#include "stoker/memory.h"

namespace stoker {

namespace fs = std::filesystem;

namespace {

// Where rank r's share of `bytes` starts when W ranks split them.
uint64_t ShareStart(uint64_t bytes, uint64_t r, uint64_t w) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(bytes) * r / w);
}

// DIR/.NAME.SUFFIX: beside OUT, hidden from discovery (names starting with '.' are ignored).
std::string Beside(const std::string& out, const char* suffix) {
  const fs::path path(out);
  return (path.parent_path() / ("." + path.filename().string() + suffix)).string();
}

std::unique_ptr<ImportInput> OpenInput(const ImportSpec& spec) {
  switch (spec.format) {
    case ImportFormat::kMegatron:
      return OpenMegatronInput(spec.inputs, spec.eos_id);
    case ImportFormat::kNpy:
      return OpenTokenFileInput(spec.inputs, spec.dtype, static_cast<int64_t>(*spec.eos_id));
    case ImportFormat::kMds:
      return OpenMdsInput(spec.inputs, spec.column, spec.dtype);
  }
  STOKER_ASSERT(false, "import format {}", static_cast<int>(spec.format));
}

// A rank gathers one shard in the input's type.
void CheckShardMemory(const ImportSpec& spec, TokenType type, uint64_t ranks_on_node) {
  const double bytes = static_cast<double>(spec.shard_tokens) * TokenTypeSize(type);
  const MemoryBudget budget = DefaultMemoryBudget(ranks_on_node);
  STOKER_CHECK(bytes <= static_cast<double>(budget.bytes), ConfigError,
               "--shard-tokens {} needs up to {} per rank to gather a shard of {} tokens, above "
               "the {} a rank may use ({})",
               spec.shard_tokens, FormatBytes(bytes), TokenTypeName(type),
               FormatBytes(static_cast<double>(budget.bytes)), budget.why);
}

// Rank 0: refuses a non-empty OUT unless forced, and makes an empty staging folder.
void PrepareStaging(const ImportSpec& spec, const std::string& staging) {
  std::error_code ec;
  if (fs::exists(spec.out, ec)) {
    STOKER_CHECK(fs::is_directory(spec.out, ec), ConfigError, "--out {} is not a folder", spec.out);
    STOKER_CHECK(spec.force || fs::is_empty(spec.out, ec), ConfigError,
                 "--out {} is not empty; use --force to replace it", spec.out);
  }
  const std::string replaced = Beside(spec.out, ".replaced");
  STOKER_CHECK(fs::exists(spec.out, ec) || !fs::exists(replaced, ec), ConfigError,
               "{} holds the dataset an interrupted import --force was replacing, and {} is "
               "missing: move it back to {} (or remove it) first",
               replaced, spec.out, spec.out);
  const fs::path out = fs::weakly_canonical(spec.out, ec);
  for (const std::string& input : spec.inputs) {
    const fs::path in = fs::weakly_canonical(input, ec);
    const auto [end, _] = std::mismatch(out.begin(), out.end(), in.begin(), in.end());
    STOKER_CHECK(end != out.end(), ConfigError,
                 "input {} lies in --out {}, which the import replaces: write elsewhere", input,
                 spec.out);
  }
  if (fs::exists(staging, ec)) {
    spdlog::warn("import: removing {}, left by an import that did not finish", staging);
    fs::remove_all(staging, ec);
    STOKER_CHECK(!ec, IoError, "cannot remove {}: {}", staging, ec.message());
  }
  fs::create_directories(staging, ec);
  STOKER_CHECK(!ec, IoError, "cannot create {}: {}", staging, ec.message());
}

// Rank 0, once every rank has written its shards: the staging folder becomes OUT.
void CommitStaging(const ImportSpec& spec, const std::string& staging) {
  std::error_code ec;
  const std::string replaced = Beside(spec.out, ".replaced");
  if (fs::exists(spec.out, ec)) {
    fs::remove_all(replaced, ec);
    fs::rename(spec.out, replaced, ec);
    STOKER_CHECK(!ec, IoError, "cannot move {} aside: {}", spec.out, ec.message());
  }
  fs::rename(staging, spec.out, ec);
  if (ec) {
    std::error_code back;
    if (fs::exists(replaced, back)) fs::rename(replaced, spec.out, back);  // the old one returns
    throw IoError(fmt::format("cannot rename {} to {}: {}", staging, spec.out, ec.message()));
  }
  const std::string parent = fs::path(spec.out).parent_path().string();
  SyncPath(parent.empty() ? "." : parent, /*folder=*/true);
  fs::remove_all(replaced, ec);
}

// Units [lo, hi) of this rank: each rank finds where its share of the bytes starts, and the
// starts are made non-decreasing (a corrupt index must not make two ranks read one document).
std::pair<uint64_t, uint64_t> RankUnits(const mpi::Comm& comm, ImportInput* input) {
  const uint64_t r = comm.rank(), w = comm.size(), bytes = input->bytes();
  uint64_t start = 0;
  mpi::FailTogether(comm, [&] { start = r == 0 ? 0 : input->UnitAt(ShareStart(bytes, r, w)); });
  ByteWriter mine;
  mine.Put(start);
  std::vector<uint64_t> starts;
  for (const std::string& bytes_of_rank : comm.AllGather(mine.bytes())) {
    ByteReader in(bytes_of_rank);
    starts.push_back(std::max(in.Get<uint64_t>(), starts.empty() ? 0 : starts.back()));
  }
  starts.push_back(std::max(input->units(), starts.back()));
  return {starts[r], starts[r + 1]};
}

}  // namespace

const char* ImportFormatName(ImportFormat format) {
  switch (format) {
    case ImportFormat::kMegatron:
      return "megatron";
    case ImportFormat::kNpy:
      return "npy";
    case ImportFormat::kMds:
      return "mds";
  }
  return "?";
}

void ImportSpec::Validate() const {
  std::vector<std::string> problems;
  if (inputs.empty()) problems.push_back("no inputs given");
  const std::string name = fs::path(out).filename().string();
  if (out.empty() || name.empty() || name == "." || name == "..") {
    problems.push_back(fmt::format("--out '{}' must name a dataset folder, DIR/NAME", out));
  } else if (name.starts_with(".")) {
    problems.push_back(
        fmt::format("--out '{}': a dataset named {} would be ignored (names starting with '.' are)",
                    out, name));
  }
  if (shard_tokens == 0) problems.push_back("--shard-tokens must be at least 1");
  if (vocab_size && (*vocab_size == 0 || *vocab_size > kMaxTokenId)) {
    problems.push_back(fmt::format("--vocab-size {} must be in [1, 2^63 - 1]", *vocab_size));
  }
  const char* eos_flag = format == ImportFormat::kMegatron ? "--eod-id" : "--eos-id";
  if (eos_id && *eos_id > kMaxTokenId) {
    problems.push_back(fmt::format("{} {} is above 2^63 - 1", eos_flag, *eos_id));
  }
  if (eos_id && vocab_size && *eos_id >= *vocab_size) {
    problems.push_back(
        fmt::format("{} {} is not below --vocab-size {}", eos_flag, *eos_id, *vocab_size));
  }
  if (format == ImportFormat::kNpy && !eos_id) {
    problems.push_back("--eos-id is required: it is where the token files' documents end");
  }
  if (format == ImportFormat::kMds && column.empty()) {
    problems.push_back("--column must name the column holding the token ids");
  }
  if (format == ImportFormat::kMegatron && dtype) {
    problems.push_back("--dtype does not apply to Megatron inputs (their .idx says it)");
  }
  if (!problems.empty()) ThrowConfigProblems("bad import options:", problems);
}

ImportStats ImportDataset(const mpi::Comm& comm, const ImportSpec& spec) {
  const auto ranks_on_node = static_cast<uint64_t>(comm.RanksOnThisNode());
  std::unique_ptr<ImportInput> input;
  mpi::FailTogether(comm, [&] {
    spec.Validate();
    input = OpenInput(spec);
    CheckShardMemory(spec, input->type(), ranks_on_node);
  });
  for (const std::string& warning : input->Warnings()) {
    if (comm.rank() == 0) spdlog::warn("import: {}", warning);
  }
  const std::string staging = Beside(spec.out, ".import");
  mpi::FailTogether(comm, [&] {
    if (comm.rank() == 0) PrepareStaging(spec, staging);
  });
  std::optional<ImportSink> sink;
  ImportContext context;
  try {
    // Not a structured binding: clang 14 (the sanitizer builds) cannot capture one in a lambda.
    const std::pair<uint64_t, uint64_t> units = RankUnits(comm, input.get());
    const uint64_t first = units.first, last = units.second;
    const uint64_t r = comm.rank(), w = comm.size(), bytes = input->bytes();
    const uint64_t share = ShareStart(bytes, r + 1, w) - ShareStart(bytes, r, w);
    uint64_t done = 0;
    context.on_read = [&](uint64_t n) {
      done += n;
      if (spec.on_progress) spec.on_progress(std::min(done, share), share);
    };
    mpi::FailTogether(comm, [&] {
      const SinkSettings settings{.folder = staging,
                                  .rank = comm.rank(),
                                  .shard_tokens = spec.shard_tokens,
                                  .narrow = spec.narrow,
                                  .vocab_size = spec.vocab_size,
                                  .eos_id = spec.eos_id,
                                  .format = ImportFormatName(spec.format),
                                  .unit = input->positions()};
      sink.emplace(settings, input->type(), input->Sources());
      TokenChecker checker(input->type(), spec.vocab_size);
      context.sink = &*sink;
      context.checker = &checker;
      input->Import(first, last, &context);
      sink->Flush();
      if (spec.on_progress) spec.on_progress(share, share);
    });
    const uint64_t shards = comm.Sum(sink->shards());
    mpi::FailTogether(comm, [&] {
      STOKER_CHECK(shards > 0, DataError, "the inputs hold no documents: nothing to import");
    });
    mpi::FailTogether(comm, [&] {
      if (comm.rank() == 0) CommitStaging(spec, staging);
    });
  } catch (const Error& e) {
    sink.reset();                // removes a shard being streamed
    if (!e.collective()) throw;  // the program ends the job: nothing can be agreed on
    comm.Barrier();              // every rank has let go of its files
    std::error_code ec;
    if (comm.rank() == 0) fs::remove_all(staging, ec);
    if (ec) spdlog::warn("import: cannot remove {}: {}", staging, ec.message());
    throw;
  }
  // The counts, then for each token type (by its enum value) the ranks that wrote shards of it.
  constexpr size_t kCounts = 4, kTypes = 8;
  std::vector<uint64_t> totals = {sink->docs(), sink->tokens(), sink->shards(),
                                  context.eos_removed};
  totals.resize(kCounts + kTypes);
  for (TokenType t : sink->types()) totals[kCounts + static_cast<size_t>(t)] = 1;
  comm.SumInPlace(totals);
  std::vector<TokenType> types;
  for (size_t t = 0; t < kTypes; ++t) {
    if (totals[kCounts + t] > 0) types.push_back(static_cast<TokenType>(t));
  }
  return {spec.inputs.size(), input->bytes(),        totals[0], totals[1], totals[2],
          totals[3],          TokenTypesLabel(types)};
}

}  // namespace stoker
