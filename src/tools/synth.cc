#include "tools/synth.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>

#include "base/check.h"
#include "order/random.h"
#include "shard/shard_writer.h"
#include "tokens/token_type.h"

namespace stoker {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kBlockTokens = uint64_t{1} << 20;  // tokens generated per Append
constexpr uint32_t kMaxFiles = 100000;                // part-NNNNN keeps path order
constexpr double kSigma = 1.0;                        // of the log-normal's normal
constexpr uint64_t kMaxTotalTokens = uint64_t{1} << 62;

// One file to write: which dataset and part it is, how many tokens it holds and where its
// first token sits in the whole corpus (the value of that token under unique_tokens).
struct SynthFile {
  uint32_t dataset = 0;
  uint32_t part = 0;
  uint64_t tokens = 0;
  uint64_t first_token = 0;
  std::string path;
};

std::vector<SynthFile> PlanFiles(const SynthSpec& spec) {
  std::vector<SynthFile> files;
  uint64_t position = 0;
  for (uint32_t d = 0; d < spec.datasets.size(); ++d) {
    const SynthDataset& dataset = spec.datasets[d];
    for (uint32_t f = 0; f < spec.files; ++f) {
      const uint64_t share = dataset.tokens / spec.files + (f < dataset.tokens % spec.files);
      files.push_back(
          {d, f, share, position, fmt::format("{}/{}/part-{:05}.h5", spec.out, dataset.name, f)});
      position += share;
    }
  }
  return files;
}

uint64_t TotalTokens(const SynthSpec& spec) {
  uint64_t total = 0;
  for (const auto& d : spec.datasets) total += d.tokens;
  return total;
}

// Document offsets of one file: log-normal lengths until the file's share is reached, the last
// document cut to fit.
std::vector<uint64_t> DocOffsets(const SynthSpec& spec, const SynthFile& file) {
  CounterRng rng(DeriveKey(spec.seed, "synth-lengths", file.dataset, file.part));
  const double mu = std::log(spec.datasets[file.dataset].mean_doc_len) - kSigma * kSigma / 2;
  std::vector<uint64_t> offsets = {0};
  uint64_t end = 0;
  while (end < file.tokens) {
    const double length = std::exp(mu + kSigma * rng.NextNormal());
    const auto rounded = static_cast<uint64_t>(std::llround(std::min(length, 1e15)));
    end = std::min(file.tokens, end + std::max<uint64_t>(1, rounded));
    offsets.push_back(end);
  }
  return offsets;
}

// With unique tokens, ids 0 .. total - 1 are the tokens, total is the EOS and total + 1 a BOS that
// runs may ask for (--bos-id): every id the loader can deliver is distinct and in the vocabulary.
ShardAttributes AttributesFor(const SynthSpec& spec) {
  ShardAttributes attributes;
  attributes.tokenizer = "synthetic";
  if (spec.unique_tokens) {
    const auto total = static_cast<int64_t>(TotalTokens(spec));
    attributes.vocab_size = total + 2;
    attributes.eos_id = total;
    attributes.bos_id = total + 1;
    return attributes;
  }
  attributes.vocab_size = static_cast<int64_t>(spec.vocab);
  attributes.eos_id = static_cast<int64_t>(spec.vocab - 1);
  return attributes;
}

// Writes one file and returns its number of documents.
uint64_t WriteFile(const SynthSpec& spec, const SynthFile& file) {
  const ShardAttributes attributes = AttributesFor(spec);
  const TokenType type = TokenTypeForVocab(static_cast<uint64_t>(*attributes.vocab_size));
  const std::vector<uint64_t> offsets = DocOffsets(spec, file);
  ShardWriter writer(file.path, type, offsets, attributes);
  CounterRng rng(DeriveKey(spec.seed, "synth-tokens", file.dataset, file.part));
  std::vector<uint64_t> block;
  for (uint64_t at = 0; at < file.tokens; at += block.size()) {
    block.resize(std::min(kBlockTokens, file.tokens - at));
    for (size_t i = 0; i < block.size(); ++i) {
      block[i] = spec.unique_tokens ? file.first_token + at + i : rng.NextBelow(spec.vocab - 1);
    }
    writer.Append(block);
  }
  writer.Finish();
  return offsets.size() - 1;
}

// The *.h5 files already below a synth's output folder.
struct ExistingShards {
  std::optional<fs::path> first;   // the first one found, for messages
  std::vector<fs::path> replaced;  // part-*.h5 right in a dataset folder this synth writes
  std::vector<fs::path> kept;      // any other that discovery would take for a shard
};

// True when discovery takes `path` (an *.h5 file below `root`) for a shard: it lies in a dataset
// folder, and no folder on its way is hidden (docs/format.md).
bool SeenByDiscovery(const fs::path& path, const fs::path& root) {
  const fs::path rel = path.lexically_relative(root);
  int depth = 0;
  for (const auto& part : rel) {
    if (part.string().starts_with(".")) return false;
    ++depth;
  }
  return depth >= 2;
}

ExistingShards FindShards(const SynthSpec& spec) {
  const fs::path root = fs::path(spec.out).lexically_normal();
  std::set<fs::path> written;
  for (const auto& dataset : spec.datasets) written.insert(root / dataset.name);
  ExistingShards found;
  // Linked folders are followed, as discovery follows them.
  const auto options = fs::directory_options::follow_directory_symlink;
  for (const auto& entry : fs::recursive_directory_iterator(root, options)) {
    if (entry.path().extension() != ".h5" || entry.is_directory()) continue;
    const fs::path path = entry.path().lexically_normal();
    if (!found.first) found.first = path;
    if (written.contains(path.parent_path()) && path.filename().string().starts_with("part-")) {
      found.replaced.push_back(path);
    } else if (SeenByDiscovery(path, root)) {
      found.kept.push_back(path);
    }
  }
  return found;
}

// Rank 0: refuses a folder that already holds shards unless forced; when forced, removes the
// part-*.h5 of the datasets it writes (an earlier run with more --files must not leave any) and
// refuses other shards that would mix with this run's. Then makes the folders.
void PrepareOutput(const SynthSpec& spec) {
  std::error_code ec;
  if (fs::exists(spec.out, ec)) {
    STOKER_CHECK(fs::is_directory(spec.out, ec), ConfigError,
                 "synth output {} exists and is not a folder", spec.out);
    const ExistingShards found = FindShards(spec);
    STOKER_CHECK(spec.force || !found.first, ConfigError,
                 "synth output {} already holds a corpus (found {}); use --force to replace the "
                 "part-*.h5 shards of the datasets synth writes",
                 spec.out, found.first.value_or("").string());
    STOKER_CHECK(found.kept.empty(), ConfigError,
                 "synth output {} holds {}, which synth --force does not replace (it replaces the "
                 "part-*.h5 shards of the datasets it writes) and which would mix with this "
                 "run's corpus; remove it or write elsewhere",
                 spec.out, found.kept.empty() ? "" : found.kept.front().string());
    for (const auto& path : found.replaced) {
      fs::remove(path, ec);
      STOKER_CHECK(!ec, IoError, "cannot remove {}: {}", path.string(), ec.message());
    }
  }
  for (const auto& dataset : spec.datasets) {
    const fs::path folder = fs::path(spec.out) / dataset.name;
    fs::create_directories(folder, ec);
    STOKER_CHECK(!ec, IoError, "cannot create {}: {}", folder.string(), ec.message());
  }
}

void CheckName(const std::string& name, std::set<std::string>* seen,
               std::vector<std::string>* problems) {
  if (name.empty() || name == "." || name == ".." || name.starts_with(".") ||
      name.find('/') != std::string::npos) {
    problems->push_back(fmt::format(
        "dataset name '{}' is not a plain folder name (no '/', not empty, no leading '.')", name));
  }
  if (!seen->insert(name).second) {
    problems->push_back(fmt::format("dataset '{}' is given more than once", name));
  }
}

uint64_t ParseCount(std::string_view text, std::string_view whole) {
  uint64_t scale = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
        scale = 1000;
        break;
      case 'M':
        scale = 1000 * 1000;
        break;
      case 'G':
        scale = 1000 * 1000 * 1000;
        break;
      default:
        break;
    }
    if (scale != 1) text.remove_suffix(1);
  }
  uint64_t count = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
  STOKER_CHECK(ec == std::errc() && end == text.data() + text.size() && !text.empty(), ConfigError,
               "--dataset {}: token count '{}' is not a whole number (suffixes K, "
               "M, G allowed)",
               whole, text);
  STOKER_CHECK(count <= std::numeric_limits<uint64_t>::max() / scale, ConfigError,
               "--dataset {}: token count is too large", whole);
  return count * scale;
}

}  // namespace

void SynthSpec::Validate() const {
  std::vector<std::string> problems;
  if (out.empty()) problems.push_back("no output folder given");
  if (datasets.empty()) problems.push_back("no datasets given (--dataset NAME:TOKENS)");
  if (files == 0) problems.push_back("--files must be at least 1");
  if (files > kMaxFiles) problems.push_back(fmt::format("--files {} exceeds {}", files, kMaxFiles));
  if (vocab < 2) problems.push_back(fmt::format("--vocab {} must be at least 2", vocab));
  if (vocab > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    problems.push_back(fmt::format("--vocab {} exceeds 2^63 - 1", vocab));
  }
  std::set<std::string> seen;
  uint64_t total = 0;
  for (const auto& d : datasets) {
    CheckName(d.name, &seen, &problems);
    if (d.tokens == 0) problems.push_back(fmt::format("dataset '{}' has 0 tokens", d.name));
    if (files > 0 && d.tokens > 0 && d.tokens < files) {
      problems.push_back(
          fmt::format("dataset '{}': {} tokens cannot fill {} files", d.name, d.tokens, files));
    }
    if (!(d.mean_doc_len >= 1 && std::isfinite(d.mean_doc_len))) {
      problems.push_back(fmt::format("dataset '{}': mean document length {} must be at least 1",
                                     d.name, d.mean_doc_len));
    }
    const bool over = total > kMaxTotalTokens || d.tokens > kMaxTotalTokens - total;
    total = over ? kMaxTotalTokens + 1 : total + d.tokens;
  }
  if (total > kMaxTotalTokens) problems.push_back("the datasets hold more than 2^62 tokens");
  if (!problems.empty()) ThrowConfigProblems("bad synth spec:", problems);
}

SynthDataset ParseSynthDataset(std::string_view text) {
  const size_t colon = text.find(':');
  STOKER_CHECK(colon != std::string_view::npos, ConfigError,
               "--dataset {}: expected NAME:TOKENS[:MEAN_DOC_LEN]", text);
  SynthDataset dataset;
  dataset.name = std::string(text.substr(0, colon));
  std::string_view rest = text.substr(colon + 1);
  const size_t second = rest.find(':');
  dataset.tokens = ParseCount(rest.substr(0, second), text);
  if (second != std::string_view::npos) {
    const std::string mean(rest.substr(second + 1));
    size_t used = 0;
    try {
      dataset.mean_doc_len = std::stod(mean, &used);
    } catch (const std::exception&) {
      used = std::string::npos;
    }
    STOKER_CHECK(used == mean.size() && !mean.empty(), ConfigError,
                 "--dataset {}: mean document length '{}' is not a number", text, mean);
  }
  return dataset;
}

SynthStats SynthesizeCorpus(const mpi::Comm& comm, const SynthSpec& spec) {
  mpi::FailTogether(comm, [&] { spec.Validate(); });
  mpi::FailTogether(comm, [&] {
    if (comm.rank() == 0) PrepareOutput(spec);
  });
  const std::vector<SynthFile> files = PlanFiles(spec);
  std::vector<uint64_t> mine = {0, 0, 0, 0};  // files, docs, tokens, bytes
  mpi::FailTogether(comm, [&] {
    for (size_t j = comm.rank(); j < files.size(); j += comm.size()) {
      const uint64_t docs = WriteFile(spec, files[j]);
      std::error_code ec;
      const uint64_t bytes = fs::file_size(files[j].path, ec);
      STOKER_CHECK(!ec, IoError, "cannot stat {}: {}", files[j].path, ec.message());
      mine[0] += 1;
      mine[1] += docs;
      mine[2] += files[j].tokens;
      mine[3] += bytes;
    }
  });
  comm.SumInPlace(mine);
  return {mine[0], mine[1], mine[2], mine[3]};
}

}  // namespace stoker
