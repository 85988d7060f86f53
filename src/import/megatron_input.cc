#include "import/megatron_input.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "base/check.h"
#include "tokens/token_type.h"

namespace stoker {

namespace {

constexpr char kMagic[] = "MMIDIDX\0\0";  // 9 bytes: the array holds a 10th, the terminator
constexpr uint64_t kMagicBytes = 9;
constexpr uint64_t kHeaderBytes = kMagicBytes + 8 + 1 + 8 + 8;
constexpr uint64_t kMaxCount = uint64_t{1} << 56;  // no real index comes near; sizes cannot wrap
constexpr uint64_t kBlockDocs = 4096;              // documents whose index a rank holds at a time

std::optional<TokenType> DtypeOf(uint8_t code) {
  switch (code) {
    case 1:
      return TokenType::kUint8;
    case 2:
      return TokenType::kInt8;
    case 3:
      return TokenType::kInt16;
    case 4:
      return TokenType::kInt32;
    case 5:
      return TokenType::kInt64;
    case 8:
      return TokenType::kUint16;
    default:
      return std::nullopt;
  }
}

std::string PrefixOf(std::string input) {
  for (const char* suffix : {".idx", ".bin"}) {
    if (input.ends_with(suffix)) return input.substr(0, input.size() - 4);
  }
  return input;
}

// One PREFIX.idx + PREFIX.bin, its header checked.
struct Prefix {
  InputFile idx, bin;
  TokenType type = TokenType::kUint16;
  uint64_t item = 2;         // bytes a token
  uint64_t sequences = 0;    // S
  uint64_t doc_indices = 0;  // D: documents + 1
  uint64_t first_doc = 0;    // of the whole input, over all prefixes
  uint64_t first_byte = 0;   // of the whole input's bytes, over all prefixes' .bin files

  Prefix(const std::string& prefix) : idx(prefix + ".idx"), bin(prefix + ".bin") {}
  uint64_t docs() const { return doc_indices - 1; }
  uint64_t LengthAt(uint64_t s) const { return kHeaderBytes + 4 * s; }
  uint64_t PointerAt(uint64_t s) const { return kHeaderBytes + 4 * sequences + 8 * s; }
  uint64_t DocIndexAt(uint64_t j) const { return kHeaderBytes + 12 * sequences + 8 * j; }
  // Where document j starts in the .bin (its end when it has no sequence left); never past the
  // .bin: only a split point, never trusted for reading (Import checks every pointer).
  uint64_t DocStart(uint64_t j) const {
    const auto s = idx.ReadValue<int64_t>(DocIndexAt(j), "a document index");
    if (s < 0 || static_cast<uint64_t>(s) >= sequences) return bin.size();
    const auto pointer = idx.ReadValue<int64_t>(PointerAt(s), "a sequence pointer");
    return std::clamp<int64_t>(pointer, 0, static_cast<int64_t>(bin.size()));
  }
};

void CheckMagic(const Prefix& p) {
  char head[kMagicBytes] = {};
  const uint64_t n = std::min(kMagicBytes, p.idx.size());
  p.idx.Read(0, n, head, "the magic");
  STOKER_CHECK(std::memcmp(head, "TNTIDX\0\0", std::min<uint64_t>(n, 8)) != 0 || n < 8, DataError,
               "{} is a fairseq TNTIDX index, the format before Megatron's MMIDIDX; stoker imports "
               "MMIDIDX indexes (rebuild it with Megatron's tools/preprocess_data.py)",
               p.idx.path());
  STOKER_CHECK(n == kMagicBytes && std::memcmp(head, kMagic, kMagicBytes) == 0, DataError,
               "{} does not start with Megatron's magic MMIDIDX\\0\\0: not a Megatron index",
               p.idx.path());
  STOKER_CHECK(p.idx.size() >= kHeaderBytes, DataError,
               "{} is {} bytes, shorter than the {}-byte header of a Megatron index", p.idx.path(),
               p.idx.size(), kHeaderBytes);
}

void CheckHeader(Prefix* p) {
  CheckMagic(*p);
  const auto version = p->idx.ReadValue<uint64_t>(kMagicBytes, "the version");
  STOKER_CHECK(version == 1, DataError, "{} has version {}; stoker reads Megatron's version 1",
               p->idx.path(), version);
  const auto code = p->idx.ReadValue<uint8_t>(kMagicBytes + 8, "the dtype");
  STOKER_CHECK(code != 6 && code != 7, DataError, "{} holds {} values: not a token file",
               p->idx.path(), code == 6 ? "float64" : "float32");
  const std::optional<TokenType> type = DtypeOf(code);
  STOKER_CHECK(type.has_value(), DataError, "{} has the unknown dtype code {} (Megatron's are 1-8)",
               p->idx.path(), code);
  p->type = *type;
  p->item = static_cast<uint64_t>(TokenTypeSize(*type));
  p->sequences = p->idx.ReadValue<uint64_t>(kMagicBytes + 9, "the sequence count");
  p->doc_indices = p->idx.ReadValue<uint64_t>(kMagicBytes + 17, "the document count");
  const uint64_t s = p->sequences, d = p->doc_indices;
  STOKER_CHECK(s < kMaxCount && d < kMaxCount && d >= 1, DataError,
               "{} says {} sequences and {} document indices: not a Megatron index", p->idx.path(),
               s, d);
  const uint64_t implied = kHeaderBytes + 12 * s + 8 * d;
  STOKER_CHECK(p->idx.size() == implied || p->idx.size() == implied + s, DataError,
               "{} is {} bytes, but its counts ({} sequences, {} document indices) make {} bytes "
               "({} with multimodal modes): truncated or not a Megatron index",
               p->idx.path(), p->idx.size(), s, d, implied, implied + s);
  STOKER_CHECK(p->bin.size() % p->item == 0, DataError,
               "{} is {} bytes, not a whole number of {} tokens", p->bin.path(), p->bin.size(),
               TokenTypeName(p->type));
}

// The ends of the index, read once: the document indices start at 0 and end at S, the first
// sequence starts at byte 0 and the last ends where the .bin ends.
void CheckEnds(const Prefix& p) {
  const auto first = p.idx.ReadValue<int64_t>(p.DocIndexAt(0), "the document indices");
  const auto last = p.idx.ReadValue<int64_t>(p.DocIndexAt(p.docs()), "the document indices");
  STOKER_CHECK(first == 0 && last == static_cast<int64_t>(p.sequences), DataError,
               "{}: the document indices run from {} to {}, not from 0 to the sequence count {}",
               p.idx.path(), first, last, p.sequences);
  uint64_t end = 0;
  if (p.sequences > 0) {
    const auto pointer = p.idx.ReadValue<int64_t>(p.PointerAt(p.sequences - 1), "a pointer");
    const auto length = p.idx.ReadValue<int32_t>(p.LengthAt(p.sequences - 1), "a length");
    end = pointer < 0 || length < 0 ? 0 : pointer + length * p.item;
  }
  STOKER_CHECK(end == p.bin.size(), DataError,
               "{} is {} bytes, but {} says its sequences end at byte {}: truncated, or not the "
               "index of this .bin",
               p.bin.path(), p.bin.size(), p.idx.path(), end);
}

class MegatronInput : public ImportInput {
 public:
  MegatronInput(std::vector<Prefix> prefixes, std::optional<int64_t> end_id, bool strip)
      : prefixes_(std::move(prefixes)), end_id_(end_id), strip_(strip) {
    for (Prefix& p : prefixes_) {
      p.first_doc = units_;
      p.first_byte = bytes_;
      units_ += p.docs();
      bytes_ += p.bin.size();
    }
  }
  TokenType type() const override { return prefixes_.front().type; }
  uint64_t bytes() const override { return bytes_; }
  uint64_t units() const override { return units_; }
  const char* positions() const override { return "documents"; }

  uint64_t UnitAt(uint64_t byte) override {
    for (const Prefix& p : prefixes_) {
      if (byte >= p.first_byte + p.bin.size()) continue;
      const uint64_t local = byte > p.first_byte ? byte - p.first_byte : 0;
      uint64_t lo = 0, hi = p.docs();  // the first document starting at or after `local`
      while (lo < hi) {
        const uint64_t mid = lo + (hi - lo) / 2;
        if (p.DocStart(mid) < local) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      p.idx.Release();
      if (lo < p.docs()) return p.first_doc + lo;
    }
    return units_;
  }

  void Import(uint64_t first, uint64_t last, ImportContext* context) override {
    for (size_t i = 0; i < prefixes_.size(); ++i) {
      const Prefix& p = prefixes_[i];
      const uint64_t begin = std::max(first, p.first_doc);
      const uint64_t end = std::min(last, p.first_doc + p.docs());
      if (begin >= end) continue;
      ChunkReader reader(p.bin, p.bin.size(), context->on_read);
      for (uint64_t j = begin - p.first_doc; j < end - p.first_doc; j += kBlockDocs) {
        ImportBlock(p, i, j, std::min(end - p.first_doc, j + kBlockDocs), &reader, context);
      }
      p.idx.Release();
      p.bin.Release();
    }
  }

  std::vector<SourceFile> Sources() const override {
    std::vector<SourceFile> sources;
    for (const Prefix& p : prefixes_) {
      sources.push_back({std::filesystem::absolute(p.bin.path()).string(), p.bin.size()});
    }
    return sources;
  }

 private:
  // Documents [j0, j1) of prefix `p` (input `input`): their index checked, then their tokens.
  void ImportBlock(const Prefix& p, size_t input, uint64_t j0, uint64_t j1, ChunkReader* reader,
                   ImportContext* context) const {
    const auto docs = p.idx.ReadArray<int64_t>(p.DocIndexAt(j0), j1 - j0 + 1, "document indices");
    for (uint64_t k = 0; k < docs.size(); ++k) {
      STOKER_CHECK(docs[k] >= 0 && static_cast<uint64_t>(docs[k]) <= p.sequences, DataError,
                   "{}: document index {} is {}, outside [0, {}] (the sequence count)",
                   p.idx.path(), j0 + k, docs[k], p.sequences);
      STOKER_CHECK(k == 0 || docs[k] >= docs[k - 1], DataError,
                   "{}: document index {} is {}, below the one before it ({})", p.idx.path(),
                   j0 + k, docs[k], docs[k - 1]);
    }
    const auto s0 = static_cast<uint64_t>(docs.front()), s1 = static_cast<uint64_t>(docs.back());
    const auto starts = SequenceStarts(p, s0, s1);  // byte starts of s0..s1, checked
    for (uint64_t k = 0; k + 1 < docs.size(); ++k) {
      const uint64_t j = j0 + k;
      const uint64_t begin = starts[docs[k] - s0];
      uint64_t end = starts[docs[k + 1] - s0];
      if (end_id_ && end > begin) {
        reader->Piece(begin, 1);  // the chunk that holds the document's start, where reading goes
        int64_t last = 0;
        std::byte raw[8];
        reader->Copy(end - p.item, p.item, raw);
        WidenTokens(p.type, raw, 1, &last);
        if (last == *end_id_ && strip_) {
          end -= p.item;
          ++context->eos_removed;
        } else if (last == *end_id_) {
          ++context->eos_kept;
        }
      }
      context->FeedDocument(reader, begin, end, input, j, j + 1, [&](uint64_t t) {
        return fmt::format("{}: document {}, token {}", p.bin.path(), j, t);
      });
    }
  }

  // The byte where each sequence of [s0, s1] starts (s1: where s1 - 1 ends), every pointer
  // checked against the lengths before it and the .bin's size.
  static std::vector<uint64_t> SequenceStarts(const Prefix& p, uint64_t s0, uint64_t s1) {
    uint64_t at = 0;  // where sequence s0 must start: where the one before it ends
    if (s0 > 0) {
      const auto pointer = p.idx.ReadValue<int64_t>(p.PointerAt(s0 - 1), "a sequence pointer");
      const auto length = p.idx.ReadValue<int32_t>(p.LengthAt(s0 - 1), "a sequence length");
      at = static_cast<uint64_t>(std::max<int64_t>(pointer, 0)) +
           static_cast<uint64_t>(std::max(length, 0)) * p.item;
    }
    const auto lengths = p.idx.ReadArray<int32_t>(p.LengthAt(s0), s1 - s0, "sequence lengths");
    const auto pointers = p.idx.ReadArray<int64_t>(p.PointerAt(s0), s1 - s0, "sequence pointers");
    std::vector<uint64_t> starts;
    starts.reserve(s1 - s0 + 1);
    for (uint64_t k = 0; k < lengths.size(); ++k) {
      STOKER_CHECK(lengths[k] >= 0, DataError, "{}: sequence {} has the negative length {}",
                   p.idx.path(), s0 + k, lengths[k]);
      STOKER_CHECK(pointers[k] == static_cast<int64_t>(at), DataError,
                   "{}: sequence {} starts at byte {} of the .bin, but the sequences before it "
                   "end at byte {}",
                   p.idx.path(), s0 + k, pointers[k], at);
      starts.push_back(at);
      at += static_cast<uint64_t>(lengths[k]) * p.item;
      STOKER_CHECK(at <= p.bin.size(), DataError,
                   "{}: sequence {} ends at byte {}, past the end of {} ({} bytes)", p.idx.path(),
                   s0 + k, at, p.bin.path(), p.bin.size());
    }
    starts.push_back(at);
    return starts;
  }

  std::vector<Prefix> prefixes_;
  std::optional<int64_t> end_id_;
  bool strip_;
  uint64_t units_ = 0, bytes_ = 0;
};

}  // namespace

std::unique_ptr<ImportInput> OpenMegatronInput(const std::vector<std::string>& inputs,
                                               std::optional<int64_t> end_id, bool strip) {
  std::vector<Prefix> prefixes;
  for (const std::string& input : inputs) {
    prefixes.emplace_back(PrefixOf(input));
    CheckHeader(&prefixes.back());
    CheckEnds(prefixes.back());  // here too for a prefix no rank imports a document of
    prefixes.back().idx.Release();
    prefixes.back().bin.Release();
    CheckSameType(prefixes.back().idx.path(), prefixes.back().type, prefixes.front().idx.path(),
                  prefixes.front().type);
  }
  const auto& first = prefixes.front();
  STOKER_CHECK(!end_id || !strip || static_cast<uint64_t>(*end_id) <= LargestTokenId(first.type),
               ConfigError, "--eod-id {} cannot occur in {}: its tokens are {}", *end_id,
               first.idx.path(), TokenTypeName(first.type));
  return std::make_unique<MegatronInput>(std::move(prefixes), end_id, strip);
}

}  // namespace stoker
