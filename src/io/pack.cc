#include "io/pack.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>

#include "base/bytes.h"
#include "base/check.h"
#include "core/byte_tokenizer.h"
#include "core/token_type.h"
#include "io/shard_writer.h"

namespace stoker {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kBlock = uint64_t{1} << 20;  // bytes read, tokens written, bytes reported
constexpr uint64_t kReserveTokens = uint64_t{1} << 26;            // see ShardSink()
constexpr uint64_t kMaxId = std::numeric_limits<int64_t>::max();  // readers widen to int64

// What the documents of a run are: one run takes either byte-tokenized text or token-id arrays.
enum class DocKind : uint8_t { kNone, kBytes, kIds };

const char* KindName(DocKind kind) {
  return kind == DocKind::kBytes ? "text (byte-tokenized)" : "token-id arrays";
}

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

// The tokens of the shard being gathered: uint32 (half the memory) until an id needs uint64, then
// uint64 for the rest of the run.
class TokenBuffer {
 public:
  explicit TokenBuffer(uint64_t expected) { narrow_.reserve(expected); }
  void Append(std::span<const uint64_t> tokens) {
    for (uint64_t t : tokens) max_ = std::max(max_, t);
    if (!wide_ && max_ > std::numeric_limits<uint32_t>::max()) {
      wide_ = true;
      wide_tokens_.assign(narrow_.begin(), narrow_.end());
      narrow_ = {};
    }
    if (wide_) return (void)wide_tokens_.insert(wide_tokens_.end(), tokens.begin(), tokens.end());
    narrow_.insert(narrow_.end(), tokens.begin(), tokens.end());  // every id fits: narrows
  }
  uint64_t size() const { return wide_ ? wide_tokens_.size() : narrow_.size(); }
  uint64_t max() const { return max_; }
  void WriteTo(ShardWriter* writer) const {
    if (wide_) return writer->Append(wide_tokens_);
    std::vector<uint64_t> block;
    for (size_t at = 0; at < narrow_.size(); at += kBlock) {
      block.assign(narrow_.begin() + at, narrow_.begin() + std::min(narrow_.size(), at + kBlock));
      writer->Append(block);
    }
  }
  // Keeps the memory for the next shard: touching fresh memory costs as much as packing.
  void Clear() {
    narrow_.clear();
    wide_tokens_.clear();
    max_ = 0;
  }

 private:
  bool wide_ = false;
  std::vector<uint32_t> narrow_;
  std::vector<uint64_t> wide_tokens_;
  uint64_t max_ = 0;
};

// This rank's output: documents gathered into shards OUT/part-RRRRR-KKKKK.h5.
class ShardSink {
 public:
  // Reserves (address space, not yet memory) for one shard, up to kReserveTokens.
  ShardSink(const PackSpec& spec, int rank)
      : spec_(spec), rank_(rank), tokens_(std::min(spec.shard_tokens, kReserveTokens)) {}

  // Starts a document of `length` tokens. Writes the gathered shard first when the document
  // would not fit; streams a document longer than a shard into a shard of its own when its
  // token type is known up front.
  void StartDoc(DocKind kind, uint64_t length, const std::string& where) {
    CheckKind(kind, where);
    if (!offsets_.empty() && tokens_.size() + length > spec_.shard_tokens) Flush();
    const bool type_known = kind == DocKind::kBytes || spec_.vocab_size.has_value();
    if (length > spec_.shard_tokens && type_known) {
      const uint64_t offsets[] = {0, length};
      direct_ = std::make_unique<ShardWriter>(NextPath(), TypeFor(0), offsets, Attributes());
    }
  }
  void Append(std::span<const uint64_t> tokens) {
    tokens_appended_ += tokens.size();
    if (direct_) return direct_->Append(tokens);
    tokens_.Append(tokens);
  }
  void EndDoc() {
    ++docs_;
    if (direct_) {
      direct_->Finish();
      direct_.reset();
      return;
    }
    if (offsets_.empty()) offsets_.push_back(0);
    offsets_.push_back(tokens_.size());
    if (tokens_.size() >= spec_.shard_tokens) Flush();
  }
  // Writes the gathered documents as a shard (nothing when there are none).
  void Flush() {
    if (offsets_.empty()) return;
    ShardWriter writer(NextPath(), TypeFor(tokens_.max()), offsets_, Attributes());
    tokens_.WriteTo(&writer);
    writer.Finish();
    offsets_.clear();
    tokens_.Clear();
  }
  // Removes every shard this sink wrote (after a failure anywhere).
  void RemoveWritten() {
    direct_.reset();
    std::error_code ec;
    for (const auto& path : written_) fs::remove(path, ec);
  }

  DocKind kind() const { return kind_; }
  const std::string& first_doc() const { return first_doc_; }
  uint64_t docs() const { return docs_; }
  uint64_t tokens() const { return tokens_appended_; }
  uint64_t shards() const { return written_.size(); }

 private:
  void CheckKind(DocKind kind, const std::string& where) {
    STOKER_CHECK(kind != DocKind::kBytes || !spec_.vocab_size, DataError,
                 "{}: --vocab-size applies to token-id arrays, but this document is {}", where,
                 KindName(kind));
    if (kind_ == DocKind::kNone) {
      kind_ = kind;
      first_doc_ = where;
    }
    STOKER_CHECK(kind == kind_, DataError,
                 "{}: document is {}, but {} was {}; one pack run takes one or the other", where,
                 KindName(kind), first_doc_, KindName(kind_));
  }
  std::string NextPath() {
    written_.push_back(fmt::format("{}/part-{:05}-{:05}.h5", spec_.out, rank_, written_.size()));
    return written_.back();
  }
  TokenType TypeFor(uint64_t max_id) const {
    if (kind_ == DocKind::kBytes) return TokenTypeForVocab(kByteTokenizerVocab);
    return TokenTypeForVocab(spec_.vocab_size.value_or(max_id + 1));
  }
  ShardAttributes Attributes() const {
    ShardAttributes a;
    if (kind_ == DocKind::kBytes) {
      a = {kByteTokenizerVocab, kByteTokenizerEos, kByteTokenizerBos, kByteTokenizerName};
    } else if (spec_.vocab_size) {
      a.vocab_size = static_cast<int64_t>(*spec_.vocab_size);
    }
    return a;
  }

  const PackSpec& spec_;
  int rank_;
  DocKind kind_ = DocKind::kNone;
  std::string first_doc_;
  TokenBuffer tokens_;
  std::vector<uint64_t> offsets_;  // of the gathered documents; empty when there are none
  std::unique_ptr<ShardWriter> direct_;
  std::vector<std::string> written_;
  uint64_t docs_ = 0, tokens_appended_ = 0;
};

uint64_t TokenId(const nlohmann::json& value, const PackSpec& spec, const std::string& where,
                 size_t index) {
  const auto bad = [&](const std::string& what) {
    return DataError(
        fmt::format("{}: \"{}\"[{}] = {} {}", where, spec.field, index, value.dump(), what));
  };
  if (!value.is_number_integer()) throw bad("is not an integer token id");
  if (!value.is_number_unsigned() && value.get<int64_t>() < 0) throw bad("is negative");
  const auto id = value.get<uint64_t>();
  if (id > kMaxId) throw bad("exceeds the largest token id, 2^63 - 1");
  if (spec.vocab_size && id >= *spec.vocab_size) {
    throw bad(fmt::format("is not below --vocab-size {}", *spec.vocab_size));
  }
  return id;
}

// One jsonl line's document into `tokens`.
DocKind ParseLine(const std::string& line, const PackSpec& spec, const std::string& where,
                  std::vector<uint64_t>* tokens) {
  tokens->clear();
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw DataError(fmt::format("{}: invalid JSON: {}", where, e.what()));
  }
  STOKER_CHECK(doc.is_object(), DataError, "{}: expected a JSON object, found {}", where,
               doc.type_name());
  const auto field = doc.find(spec.field);
  STOKER_CHECK(field != doc.end(), DataError, "{}: no field \"{}\"", where, spec.field);
  if (field->is_string()) {
    EncodeBytes(field->get_ref<const std::string&>(), tokens);
    return DocKind::kBytes;
  }
  STOKER_CHECK(field->is_array(), DataError,
               "{}: field \"{}\" is {}, not an array of token ids or a string", where, spec.field,
               field->type_name());
  tokens->reserve(field->size());
  for (size_t i = 0; i < field->size(); ++i) {
    tokens->push_back(TokenId((*field)[i], spec, where, i));
  }
  return DocKind::kIds;
}

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
    const DocKind kind = ParseLine(line, spec, where, &tokens);
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

void PackSpec::Validate() const {
  std::vector<std::string> problems;
  if (inputs.empty()) problems.push_back("no inputs given");
  if (out.empty() || fs::path(out).filename().empty()) {
    problems.push_back(fmt::format("--out '{}' must name a dataset folder, DIR/NAME", out));
  }
  if (field.empty()) problems.push_back("--field must not be empty");
  if (shard_tokens == 0) problems.push_back("--shard-tokens must be at least 1");
  if (vocab_size && (*vocab_size == 0 || *vocab_size > kMaxId)) {
    problems.push_back(fmt::format("--vocab-size {} must be in [1, 2^63 - 1]", *vocab_size));
  }
  if (vocab_size && format == PackFormat::kText) {
    problems.push_back("--vocab-size applies to jsonl token-id arrays, not to --format text");
  }
  if (problems.empty()) return;
  std::string message = "bad pack options:";
  for (const auto& p : problems) message += "\n  - " + p;
  throw ConfigError(message);
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
  mpi::FailTogether(comm, [&] {
    spec.Validate();
    sizes = InputSizes(spec, first, last);
  });
  // Rank 0 clears the folder before any rank writes: FailTogether waits for every rank.
  mpi::FailTogether(comm, [&] {
    if (comm.rank() == 0) PrepareOutput(spec);
  });
  ShardSink sink(spec, comm.rank());
  try {
    mpi::FailTogether(comm, [&] { PackInputs(spec, first, sizes, &sink); });
    AgreeOnKind(comm, sink);
  } catch (...) {
    sink.RemoveWritten();
    throw;
  }
  const uint64_t bytes = std::accumulate(sizes.begin(), sizes.end(), uint64_t{0});
  std::vector<uint64_t> totals = {last - first, sink.docs(), sink.tokens(), sink.shards(), bytes};
  comm.SumInPlace(totals);
  return {totals[0], totals[1], totals[2], totals[3], totals[4]};
}

}  // namespace stoker
