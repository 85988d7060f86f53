#include "import/import.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>

#include "base/bytes.h"
#include "base/check.h"
#include "import/import_input.h"
#include "import/import_output.h"
#include "import/mds_input.h"
#include "import/megatron_input.h"
#include "import/token_file_input.h"
#include "os/files.h"
#include "stoker/program/memory.h"
#include "tokens/token_type.h"

namespace stoker {

namespace fs = std::filesystem;

namespace {

// Where rank r's share of `bytes` starts when W ranks split them.
uint64_t ShareStart(uint64_t bytes, uint64_t r, uint64_t w) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(bytes) * r / w);
}

std::unique_ptr<ImportInput> OpenInput(const ImportSpec& spec) {
  switch (spec.format) {
    case ImportFormat::kMegatron:
      return OpenMegatronInput(spec.inputs, spec.RecordedEosId(), spec.eod_id.has_value());
    case ImportFormat::kNpy:
      return OpenTokenFileInput(spec.inputs, spec.dtype, static_cast<int64_t>(*spec.eos_id),
                                spec.allow_unterminated);
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

// The problems of the end-of-document ids: which the format takes, and their values.
void EndOfDocumentProblems(const ImportSpec& spec, std::vector<std::string>* problems) {
  const bool megatron = spec.format == ImportFormat::kMegatron;
  if (megatron && !spec.eod_id && !spec.eos_id) {
    problems->push_back(
        "stoker import megatron needs the id that ends each document, and does not guess it: "
        "Megatron's tools/preprocess_data.py (--append-eod) ends every document with the "
        "tokenizer's EOD id (GPT-2's is 50256). Give --eod-id ID to take it off the end of each "
        "document (the loader appends it again), or --eos-id ID to keep the documents whole and "
        "record ID as the id the loader appends to each");
  }
  if (megatron && spec.eod_id && spec.eos_id) {
    problems->push_back(
        "give one of --eod-id (taken off each document's end) and --eos-id "
        "(documents kept whole), not both");
  }
  if (spec.format == ImportFormat::kNpy && !spec.eos_id) {
    problems->push_back("--eos-id is required: it is where the token files' documents end");
  }
  const std::pair<const char*, std::optional<uint64_t>> ids[] = {{"--eod-id", spec.eod_id},
                                                                 {"--eos-id", spec.eos_id}};
  for (const auto& [flag, id] : ids) {
    if (id && *id > kMaxTokenId) {
      problems->push_back(fmt::format("{} {} is above 2^63 - 1", flag, *id));
    } else if (id && spec.vocab_size.value_or(0) > 0 && *id >= *spec.vocab_size) {
      problems->push_back(
          fmt::format("{} {} is not below --vocab-size {}", flag, *id, *spec.vocab_size));
    }
  }
}

// "a, b, c and 7 more": the inputs, for a message.
std::string NameInputs(const std::vector<std::string>& inputs) {
  constexpr size_t kNamed = 4;
  const size_t named = std::min(inputs.size(), kNamed);
  const std::vector<std::string> first(inputs.begin(), inputs.begin() + named);
  return fmt::format(
      "{}{}", fmt::join(first, ", "),
      inputs.size() > named ? fmt::format(" and {} more", inputs.size() - named) : "");
}

// Collective: this rank's share of the input, as shards in `staging`.
void WriteShards(const mpi::Comm& comm, const ImportSpec& spec, ImportInput* input,
                 const std::string& staging, std::optional<ImportSink>* sink,
                 ImportContext* context) {
  // Not a structured binding: clang 14 (the sanitizer builds) cannot capture one in a lambda.
  const std::pair<uint64_t, uint64_t> units = RankUnits(comm, input);
  const uint64_t r = comm.rank(), w = comm.size(), bytes = input->bytes();
  const uint64_t share = ShareStart(bytes, r + 1, w) - ShareStart(bytes, r, w);
  uint64_t done = 0;
  context->on_read = [&](uint64_t n) {
    done += n;
    if (spec.on_progress) spec.on_progress(std::min(done, share), share);
  };
  mpi::FailTogether(comm, [&] {
    const SinkSettings settings{.folder = staging,
                                .rank = comm.rank(),
                                .shard_tokens = spec.shard_tokens,
                                .narrow = spec.narrow,
                                .vocab_size = spec.vocab_size,
                                .eos_id = spec.RecordedEosId(),
                                .format = ImportFormatName(spec.format),
                                .unit = input->positions()};
    sink->emplace(settings, input->type(), input->Sources());
    TokenChecker checker(input->type(), spec.vocab_size);
    context->sink = &**sink;
    context->checker = &checker;
    input->Import(units.first, units.second, context);
    (*sink)->Flush();
    if (spec.on_progress) spec.on_progress(share, share);
  });
  const uint64_t shards = comm.Sum((*sink)->shards());
  mpi::FailTogether(comm, [&] {
    STOKER_CHECK(shards > 0, DataError, "the inputs hold no documents, nothing to import: {}",
                 NameInputs(spec.inputs));
  });
}

// Collective: what the ranks wrote, summed.
ImportStats Totals(const mpi::Comm& comm, const ImportSpec& spec, const ImportInput& input,
                   const ImportSink& sink, const ImportContext& context) {
  // The counts, then for each token type (by its enum value) the ranks that wrote shards of it.
  constexpr size_t kCounts = 5, kTypes = 8;
  std::vector<uint64_t> totals = {sink.docs(), sink.tokens(), sink.shards(), context.eos_removed,
                                  context.eos_kept};
  totals.resize(kCounts + kTypes);
  for (TokenType t : sink.types()) totals[kCounts + static_cast<size_t>(t)] = 1;
  comm.SumInPlace(totals);
  std::vector<TokenType> types;
  for (size_t t = 0; t < kTypes; ++t) {
    if (totals[kCounts + t] > 0) types.push_back(static_cast<TokenType>(t));
  }
  return {.inputs = spec.inputs.size(),
          .input_bytes = input.bytes(),
          .documents = totals[0],
          .tokens = totals[1],
          .shards = totals[2],
          .eos_removed = totals[3],
          .eos_kept = totals[4],
          .token_type = TokenTypesLabel(types)};
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
  if (vocab_size && *vocab_size == 0) {
    problems.push_back(
        "--vocab-size 0: a vocabulary holds at least one id (every token id must "
        "be below --vocab-size)");
  } else if (vocab_size && *vocab_size > kMaxTokenId) {
    problems.push_back(
        fmt::format("--vocab-size {} is above 2^63 - 1, the largest id stoker "
                    "reads",
                    *vocab_size));
  }
  EndOfDocumentProblems(*this, &problems);
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
  ImportOutput output(spec.out);  // rank 0 holds its lock from here to the end
  mpi::FailTogether(comm, [&] {
    if (comm.rank() != 0) return;
    output.Lock(
        "two imports into one folder would lose documents. Wait for it to end, or "
        "choose another --out");
    output.Prepare(spec.force, spec.inputs);
  });
  std::optional<ImportSink> sink;
  ImportContext context;
  try {
    WriteShards(comm, spec, input.get(), output.staging(), &sink, &context);
    mpi::FailTogether(comm, [&] {
      if (comm.rank() == 0) output.Commit();
    });
  } catch (const Error& e) {
    sink.reset();                // removes a shard being streamed
    if (!e.collective()) throw;  // the program ends the job: nothing can be agreed on
    comm.Barrier();              // every rank has let go of its files
    if (comm.rank() == 0) output.RemoveStaging();
    throw;
  }
  return Totals(comm, spec, *input, *sink, context);
}

std::vector<std::string> RemoveImportLeftovers(const mpi::Comm& comm, const std::string& out) {
  ImportOutput output(out);
  std::vector<std::string> removed;
  mpi::FailTogether(comm, [&] {
    const fs::path folder = fs::path(out).parent_path();
    if (comm.rank() != 0 || (!folder.empty() && !fs::exists(folder))) return;
    output.Lock("what lies beside it is that import's, not a leftover. Wait for it to end");
    removed = output.RemoveLeftovers();
  });
  return removed;
}

}  // namespace stoker
