#include "fuzz_checks.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "audit/piece_audit.h"
#include "checkpoint/restore.h"
#include "loader/piece_trace.h"
#include "packing/row_planner.h"
#include "state/checkpoint_codec.h"
#include "stoker/error.h"
#include "stoker/weights.h"
#include "tokens/byte_tokenizer.h"
#include "tools/jsonl_doc.h"

namespace stoker::fuzz {

namespace {

namespace fs = std::filesystem;

void Require(bool ok, const std::string& what) {
  if (!ok) throw FuzzFailure(what);
}

// Runs `parse`; false when it refused the input with a stoker::Error (other than InternalError).
template <typename F>
bool Accepts(F&& parse) {
  try {
    parse();
    return true;
  } catch (const InternalError&) {
    throw;
  } catch (const Error&) {
    return false;
  }
}

// Equal, weights compared bit for bit (a NaN weight equals itself).
bool SameCheckpoint(RankCheckpoint a, RankCheckpoint b) {
  if (a.weights.size() != b.weights.size()) return false;
  if (!a.weights.empty() &&
      std::memcmp(a.weights.data(), b.weights.data(), a.weights.size() * sizeof(double)) != 0) {
    return false;
  }
  a.weights.clear();
  b.weights.clear();
  return a == b;
}

// A corpus of the checkpoint's datasets, with 3, 8, 13, ... documents.
PlannerConfig PlannerFor(const RankCheckpoint& c) {
  PlannerConfig planner;
  planner.seed = c.identity.seed;
  planner.logical_shards = c.identity.logical_shards;
  planner.world = c.world;
  planner.rank = c.rank;
  planner.row_tokens = c.identity.seq_len + 1;
  planner.bos = c.identity.bos_id.has_value();
  planner.schedule = c.schedule;
  for (size_t d = 0; d < c.identity.datasets.size(); ++d) {
    planner.datasets.push_back({c.identity.datasets[d], 3 + 5 * d});
  }
  return planner;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A folder of this process under $TMPDIR, removed at exit.
class Scratch {
 public:
  Scratch() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = fmt::format("{}/stoker-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    Require(::mkdtemp(pattern.data()) != nullptr, "cannot create a scratch folder " + pattern);
    path_ = pattern;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  Require(out.good(), "cannot write " + path);
}

// Writes the rank files of `data` (see CheckTrace in the header) into a trace folder under
// `scratch` and returns its path. Each layout (worlds, start step) has its own folder, made once
// and then only overwritten: creating and removing folders would take most of the time.
std::string WriteTraceDir(const std::string& scratch, std::string_view data) {
  const auto shape = static_cast<uint8_t>(data[0]);
  const bool second = shape & 4;
  const uint64_t world0 = 1 + (shape & 3), world1 = 1 + ((shape >> 3) & 3);
  const uint64_t start1 = second ? 1 + static_cast<uint8_t>(data[1]) : 0;
  const std::string dir =
      fmt::format("{}/w{}-w{}-from{}", scratch, world0, second ? world1 : 0, start1);
  std::vector<std::string> files;
  for (uint64_t r = 0; r < world0; ++r) {
    files.push_back(fmt::format("{}/from-0/rank-{}-of-{}.trace", dir, r, world0));
  }
  for (uint64_t r = 0; second && r < world1; ++r) {
    files.push_back(fmt::format("{}/from-{}/rank-{}-of-{}.trace", dir, start1, r, world1));
  }
  static std::set<std::string> made;
  if (made.insert(dir).second) {
    fs::create_directories(dir + "/from-0");
    if (second) fs::create_directories(fmt::format("{}/from-{}", dir, start1));
  }
  const std::string_view rest = data.substr(2);
  const size_t chunk = rest.size() / files.size();
  for (size_t i = 0; i < files.size(); ++i) {
    const size_t end = i + 1 == files.size() ? rest.size() : (i + 1) * chunk;
    WriteFile(files[i], rest.substr(i * chunk, end - i * chunk));
  }
  return dir;
}

// Corpus facts of 1-4 datasets of 8, 12, ... documents; document 0 of each is empty.
AuditCorpus CorpusFacts(const std::vector<TraceRun>& runs, uint64_t datasets) {
  AuditCorpus facts;
  for (uint64_t d = 0; d < datasets; ++d) {
    facts.names.push_back(fmt::format("d{}", d));
    facts.docs.push_back(8 + 4 * d);
    facts.nonempty.push_back(8 + 4 * d - 1);
  }
  facts.named_docs = DocumentsNamed(runs, facts.docs);
  for (const auto& named : facts.named_docs) {
    facts.framed_lengths.emplace_back();
    for (uint64_t doc : named) facts.framed_lengths.back().push_back(doc == 0 ? 0 : 2 + doc % 5);
  }
  return facts;
}

}  // namespace

void CheckCheckpoint(std::string_view data) {
  std::string file(data);
  if (file.size() >= 20) {  // bytes 12..19: the payload length, little-endian
    const uint64_t length = file.size() - 20;
    for (int i = 0; i < 8; ++i) file[12 + i] = static_cast<char>(length >> (8 * i));
  }
  const uint64_t sum = XXH3_64bits(file.data(), file.size());
  for (int i = 0; i < 8; ++i) file.push_back(static_cast<char>(sum >> (8 * i)));
  RankCheckpoint c;
  if (!Accepts([&] { c = DecodeCheckpoint(file, "fuzz.ckpt"); })) return;
  const std::string again = EncodeCheckpoint(c);
  RankCheckpoint back;
  Require(Accepts([&] { back = DecodeCheckpoint(again, "re-encoded"); }),
          "the re-encoded checkpoint does not decode");
  Require(SameCheckpoint(c, back), "the checkpoint changed in an encode/decode round trip");
  Require(EncodeCheckpoint(back) == again, "encoding is not deterministic");
  Require(IdentityDifferences(c.identity, back.identity).empty(), "identities differ");
  Accepts([&] { CheckStateFits(c.state, PlannerFor(c), "fuzz"); });
}

namespace {

// A schedule `parse` accepts has no shape problem and prints to inline text that parses back to
// it and prints again to the same text.
template <typename F>
void CheckSchedule(F&& parse) {
  WeightSchedule schedule;
  if (!Accepts([&] { schedule = parse(); })) return;
  Require(WeightScheduleProblems(schedule).empty(), "an accepted schedule has problems");
  const std::string text = FormatWeightSchedule(schedule);
  WeightSchedule again;
  Require(Accepts([&] { again = ParseWeightSchedule(text); }),
          "a printed schedule does not parse: " + text);
  Require(again == schedule, "a printed schedule parses to another schedule: " + text);
  Require(FormatWeightSchedule(again) == text, "a schedule prints two ways: " + text);
}

}  // namespace

void CheckWeights(std::string_view data) {
  CheckSchedule([&] { return ParseWeightSchedule(data); });
  CheckSchedule([&] { return ParseWeightScheduleFile(data, "fuzz.toml"); });
  std::map<std::string, double> weights;
  if (!Accepts([&] { weights = ParseWeights(data); })) return;
  std::string text;
  for (const auto& [name, weight] : weights) {
    Require(!name.empty() && Trim(name) == name && name.find_first_of(",=") == std::string::npos,
            fmt::format("bad dataset name '{}'", name));
    Require(std::isfinite(weight) && weight >= 0, fmt::format("bad weight {}", weight));
    text += fmt::format("{}{}={}", text.empty() ? "" : ",", name, weight);
  }
  std::map<std::string, double> again;
  Require(Accepts([&] { again = ParseWeights(text); }), "printed weights do not parse: " + text);
  Require(again == weights, "printed weights parse to other weights: " + text);
}

void CheckJsonlLine(std::string_view data) {
  PackSpec spec;
  if (data.size() % 2 == 1) spec.vocab_size = 50000;
  std::vector<uint64_t> tokens;
  DocKind kind = DocKind::kNone;
  if (!Accepts([&] { kind = ParseJsonlDoc(data, spec, "fuzz.jsonl:1", &tokens); })) return;
  const nlohmann::json field = nlohmann::json::parse(data).at(spec.field);
  if (kind == DocKind::kBytes) {
    const auto& text = field.get_ref<const std::string&>();
    Require(tokens.size() == text.size(), "a string did not give one token per byte");
    Require(DecodeBytes(tokens) == text, "a string's tokens do not decode to it");
    return;
  }
  Require(kind == DocKind::kIds && tokens.size() == field.size(), "ids lost or gained");
  for (size_t i = 0; i < tokens.size(); ++i) {
    Require(tokens[i] <= kMaxTokenId, fmt::format("id {} above 2^63 - 1", tokens[i]));
    Require(!spec.vocab_size || tokens[i] < *spec.vocab_size, "an id beyond the vocabulary");
    Require(field[i].get<uint64_t>() == tokens[i], "an id changed");
  }
}

void CheckTrace(std::string_view data) {
  if (data.size() < 2) return;
  static const Scratch scratch;
  const std::string dir = WriteTraceDir(scratch.path(), data);
  std::vector<TraceRun> runs;
  if (!Accepts([&] { runs = ReadTraceDir(dir); })) return;
  const auto shape = static_cast<uint8_t>(data[0]);
  std::optional<AuditCorpus> corpus;
  if (shape & 32) corpus = CorpusFacts(runs, 1 + (shape >> 6));
  AuditReport report;
  Require(Accepts([&] { report = AuditTrace(std::move(runs), corpus ? &*corpus : nullptr); }),
          "AuditTrace threw for a trace it was given");
  Require(report.problems.size() <= AuditReport::kKeptProblems &&
              report.problem_count >= report.problems.size(),
          "the report's problem counts disagree");
}

}  // namespace stoker::fuzz
