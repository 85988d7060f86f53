#include "tools/pack.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>

#include "base/bytes.h"
#include "base/check.h"
#include "stoker/program/memory.h"
#include "tokens/byte_tokenizer.h"
#include "tools/jsonl_doc.h"
#include "tools/pack_sink.h"

namespace stoker {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kBlock = uint64_t{1} << 20;  // bytes read at a time and between reports

// This rank's bytes consumed, passed to the spec's callback every block and at the end.
struct ProgressCounter {
  const PackSpec& spec;
  uint64_t total = 0, done = 0, reported = 0;
  void Add(uint64_t bytes) {
    done += bytes;
    if (done - reported >= kBlock) Report();
  }
  void Report() {
    reported = done;
    if (spec.on_progress) spec.on_progress(done, total);
  }
};

std::ifstream OpenInput(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  STOKER_CHECK(in.is_open(), IoError, "cannot open input {}: {}", path, std::strerror(errno));
  return in;
}

void PackJsonl(const std::string& path, const PackSpec& spec, ShardSink* sink,
               ProgressCounter* progress) {
  std::ifstream in = OpenInput(path);
  std::string line;
  std::vector<uint64_t> tokens;
  for (uint64_t number = 1; std::getline(in, line); ++number) {
    progress->Add(line.size() + (in.eof() ? 0 : 1));
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank line
    const std::string where = fmt::format("{}:{}", path, number);        // for messages
    const DocKind kind = ParseJsonlDoc(line, spec, where, &tokens);
    sink->StartDoc(kind, tokens.size(), where);
    sink->Append(tokens);
    sink->EndDoc();
  }
  STOKER_CHECK(!in.bad(), IoError, "error reading input {}: {}", path, std::strerror(errno));
}

void PackText(const std::string& path, uint64_t size, ShardSink* sink, ProgressCounter* progress) {
  std::ifstream in = OpenInput(path);
  sink->StartDoc(DocKind::kBytes, size, path);
  std::string block(kBlock, '\0');
  std::vector<uint64_t> tokens;
  uint64_t total = 0;
  while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0) {
    const auto n = static_cast<uint64_t>(in.gcount());
    total += n;
    STOKER_CHECK(total <= size, DataError, "input {} grew beyond {} bytes while being packed", path,
                 size);
    tokens.clear();
    EncodeBytes(std::string_view(block.data(), n), &tokens);
    sink->Append(tokens);
    progress->Add(n);
  }
  STOKER_CHECK(!in.bad(), IoError, "error reading input {}: {}", path, std::strerror(errno));
  STOKER_CHECK(total == size, DataError, "input {} shrank from {} to {} bytes while being packed",
               path, size, total);
  sink->EndDoc();
}

// Sizes of this rank's inputs; throws for a missing input or one that is not a file.
std::vector<uint64_t> InputSizes(const PackSpec& spec, size_t first, size_t last) {
  std::vector<uint64_t> sizes;
  for (size_t i = first; i < last; ++i) {
    const std::string& path = spec.inputs[i];
    std::error_code ec;
    const auto status = fs::status(path, ec);
    STOKER_CHECK(fs::exists(status), ConfigError, "input {} does not exist", path);
    STOKER_CHECK(fs::is_regular_file(status), ConfigError, "input {} is not a file", path);
    sizes.push_back(fs::file_size(path, ec));
    STOKER_CHECK(!ec, IoError, "cannot stat input {}: {}", path, ec.message());
  }
  return sizes;
}

// Rank 0: refuses a non-empty output folder unless forced, then removes its old shards.
void PrepareOutput(const PackSpec& spec) {
  std::error_code ec;
  if (fs::exists(spec.out, ec)) {
    STOKER_CHECK(fs::is_directory(spec.out, ec), ConfigError, "--out {} is not a folder", spec.out);
    STOKER_CHECK(spec.force || fs::is_empty(spec.out, ec), ConfigError,
                 "--out {} is not empty; use --force to replace its part-*.h5 shards", spec.out);
    for (const auto& entry : fs::directory_iterator(spec.out)) {
      const std::string name = entry.path().filename().string();
      if (!name.starts_with("part-") || !name.ends_with(".h5")) continue;
      fs::remove(entry.path(), ec);
      STOKER_CHECK(!ec, IoError, "cannot remove {}: {}", entry.path().string(), ec.message());
    }
  }
  fs::create_directories(spec.out, ec);
  STOKER_CHECK(!ec, IoError, "cannot create {}: {}", spec.out, ec.message());
}

void PackInputs(const PackSpec& spec, size_t first, const std::vector<uint64_t>& sizes,
                ShardSink* sink) {
  ProgressCounter progress{spec, std::accumulate(sizes.begin(), sizes.end(), uint64_t{0})};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string& path = spec.inputs[first + i];
    if (InputFormat(spec.format, path) == PackFormat::kJsonl) {
      PackJsonl(path, spec, sink, &progress);
    } else {
      PackText(path, sizes[i], sink, &progress);
    }
  }
  sink->Flush();
  progress.Report();
}

// Collective: every rank's documents must be of one kind.
void AgreeOnKind(const mpi::Comm& comm, const ShardSink& sink) {
  ByteWriter mine;
  mine.Put(static_cast<uint8_t>(sink.kind()));
  mine.PutString(sink.first_doc());
  std::string first[3];  // by DocKind: the first document of that kind over all ranks
  for (const auto& bytes : comm.AllGather(mine.bytes())) {
    ByteReader in(bytes);
    const auto kind = in.Get<uint8_t>();
    if (std::string where = in.GetString(); first[kind].empty()) first[kind] = where;
  }
  const std::string& text = first[static_cast<int>(DocKind::kBytes)];
  const std::string& ids = first[static_cast<int>(DocKind::kIds)];
  if (text.empty() || ids.empty()) return;
  throw DataError(fmt::format("{} is {} but {} is {}; one pack run takes one or the other", text,
                              KindName(DocKind::kBytes), ids, KindName(DocKind::kIds)),
                  /*collective=*/true);
}

}  // namespace

void PackSpec::Validate(uint64_t ranks_on_node) const {
  std::vector<std::string> problems;
  if (inputs.empty()) problems.push_back("no inputs given");
  if (out.empty() || fs::path(out).filename().empty()) {
    problems.push_back(fmt::format("--out '{}' must name a dataset folder, DIR/NAME", out));
  }
  if (field.empty()) problems.push_back("--field must not be empty");
  if (shard_tokens == 0) problems.push_back("--shard-tokens must be at least 1");
  // A rank gathers one shard's tokens in memory: 4 bytes each, 8 for ids above 2^32 - 1 (which
  // only a vocab_size above 2^32, or none, allows).
  const double per_token = vocab_size && *vocab_size <= (uint64_t{1} << 32) ? 4 : 8;
  const double shard_bytes = per_token * static_cast<double>(shard_tokens);
  if (const MemoryBudget budget = DefaultMemoryBudget(ranks_on_node);
      shard_bytes > static_cast<double>(budget.bytes)) {
    problems.push_back(
        fmt::format("--shard-tokens {} needs up to {} per rank to gather a shard, "
                    "above the {} a rank may use ({})",
                    shard_tokens, FormatBytes(shard_bytes),
                    FormatBytes(static_cast<double>(budget.bytes)), budget.why));
  }
  if (vocab_size && (*vocab_size == 0 || *vocab_size > kMaxTokenId)) {
    problems.push_back(fmt::format("--vocab-size {} must be in [1, 2^63 - 1]", *vocab_size));
  }
  if (vocab_size && format == PackFormat::kText) {
    problems.push_back("--vocab-size applies to jsonl token-id arrays, not to --format text");
  }
  if (!problems.empty()) ThrowConfigProblems("bad pack options:", problems);
}

PackFormat InputFormat(PackFormat spec_format, const std::string& path) {
  if (spec_format != PackFormat::kAuto) return spec_format;
  const std::string ext = fs::path(path).extension().string();
  return ext == ".jsonl" || ext == ".json" ? PackFormat::kJsonl : PackFormat::kText;
}

PackStats PackDataset(const mpi::Comm& comm, const PackSpec& spec) {
  const uint64_t n = spec.inputs.size(), r = comm.rank(), w = comm.size();
  const size_t first = r * n / w, last = (r + 1) * n / w;  // this rank's inputs: a contiguous run
  std::vector<uint64_t> sizes;
  const auto ranks_on_node = static_cast<uint64_t>(comm.RanksOnThisNode());
  mpi::FailTogether(comm, [&] {
    spec.Validate(ranks_on_node);
    sizes = InputSizes(spec, first, last);
  });
  // Rank 0 clears the folder before any rank writes: FailTogether waits for every rank.
  mpi::FailTogether(comm, [&] {
    if (comm.rank() == 0) PrepareOutput(spec);
  });
  // The sink reserves up to 256 MB: built inside FailTogether, so that a rank that cannot
  // (bad_alloc) fails with the others instead of leaving them in the all-gather.
  std::optional<ShardSink> sink;
  try {
    mpi::FailTogether(comm, [&] {
      sink.emplace(spec, comm.rank());
      PackInputs(spec, first, sizes, &*sink);
    });
    AgreeOnKind(comm, *sink);
  } catch (...) {
    if (sink) sink->RemoveWritten();
    throw;
  }
  const uint64_t bytes = std::accumulate(sizes.begin(), sizes.end(), uint64_t{0});
  std::vector<uint64_t> totals = {last - first, sink->docs(), sink->tokens(), sink->shards(),
                                  bytes};
  comm.SumInPlace(totals);
  return {totals[0], totals[1], totals[2], totals[3], totals[4]};
}

}  // namespace stoker
