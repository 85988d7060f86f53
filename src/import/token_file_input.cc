#include "import/token_file_input.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "base/check.h"
#include "tokens/token_type.h"

namespace stoker {

namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr uint64_t kNpyMagicBytes = 6;
constexpr uint64_t kMaxHeaderBytes = uint64_t{1} << 16;  // real headers are under 4 KiB
constexpr uint64_t kScanTokens = uint64_t{1} << 16;  // tokens searched at a time for the eos_id

// One token file: where its tokens lie and how many there are.
struct TokenFile {
  InputFile file;
  TokenType type = TokenType::kUint16;
  bool has_header = false;
  uint64_t data_begin = 0;  // byte where the tokens start (after a .npy header)
  uint64_t tokens = 0;
  uint64_t first_token = 0;  // of the whole input, over all files
  uint64_t first_byte = 0;   // of the whole input's token bytes
  explicit TokenFile(std::string path) : file(std::move(path)) {}
  uint64_t item() const { return static_cast<uint64_t>(TokenTypeSize(type)); }
  uint64_t data_end() const { return data_begin + tokens * item(); }
};

// The value of `key` in a .npy header's dict ("{'descr': '<u2', 'fortran_order': False, ...}").
std::string HeaderField(const std::string& header, const std::string& key, const char* pattern,
                        const std::string& path) {
  const std::regex field("'" + key + "'\\s*:\\s*" + pattern);
  std::smatch match;
  STOKER_CHECK(std::regex_search(header, match, field), DataError,
               "{}: the .npy header has no readable '{}' ({})", path, key, header);
  return match[1].str();
}

// Reads a .npy header (the file starts with NumPy's magic): type, shape and where data starts.
void ReadNpyHeader(TokenFile* t) {
  const std::string& path = t->file.path();
  uint8_t version[2];
  t->file.Read(kNpyMagicBytes, 2, version, "the .npy version");
  STOKER_CHECK(version[0] >= 1 && version[0] <= 3, DataError,
               "{}: .npy format version {}.{}; stoker reads 1.0 to 3.0", path, version[0],
               version[1]);
  uint64_t length = 0;
  if (version[0] == 1) {
    length = t->file.ReadValue<uint16_t>(8, "the .npy header length");
    t->data_begin = 10 + length;
  } else {
    length = t->file.ReadValue<uint32_t>(8, "the .npy header length");
    t->data_begin = 12 + length;
  }
  STOKER_CHECK(length <= kMaxHeaderBytes, DataError, "{}: a .npy header of {} bytes", path, length);
  std::string header(length, '\0');
  t->file.Read(t->data_begin - length, length, header.data(), "the .npy header");
  const std::string descr = HeaderField(header, "descr", "'([^']*)'", path);
  const std::string order = HeaderField(header, "fortran_order", "(True|False)", path);
  const std::string shape = HeaderField(header, "shape", "\\(([0-9,\\s]*)\\)", path);
  STOKER_CHECK(descr.size() >= 3 && descr[0] != '>', DataError,
               "{} holds big-endian values ('{}'); stoker reads little-endian token files", path,
               descr);
  STOKER_CHECK(descr[1] == 'u' || descr[1] == 'i', DataError,
               "{} holds '{}' values: not integer token ids", path, descr);
  const std::optional<TokenType> type =
      TokenTypeFrom(std::atoi(descr.c_str() + 2), descr[1] == 'i');
  STOKER_CHECK(type.has_value(), DataError, "{}: unknown integer type '{}'", path, descr);
  t->type = *type;
  uint64_t count = 1, dims = 0;
  const std::regex number("[0-9]+");
  for (std::sregex_iterator it(shape.begin(), shape.end(), number), none; it != none;
       ++it, ++dims) {
    const std::string dim = it->str();
    STOKER_CHECK(dim.size() <= 18 && !__builtin_mul_overflow(count, std::stoull(dim), &count) &&
                     count <= (uint64_t{1} << 60),
                 DataError, "{}: the .npy shape ({}) is too large for a file", path, shape);
  }
  STOKER_CHECK(order == "False" || dims <= 1, DataError,
               "{}: a {}-dimensional array in Fortran order; stoker reads C order", path, dims);
  t->tokens = count;
  const uint64_t size = t->data_begin + count * t->item();
  STOKER_CHECK(t->file.size() == size, DataError,
               "{} is {} bytes, but its .npy header (shape ({}), '{}') makes {}: truncated?", path,
               t->file.size(), shape, descr, size);
}

void OpenTokenFile(TokenFile* t, std::optional<TokenType> dtype) {
  const std::string& path = t->file.path();
  char head[kNpyMagicBytes] = {};
  if (t->file.size() >= kNpyMagicBytes) t->file.Read(0, kNpyMagicBytes, head, "the start");
  t->has_header = std::memcmp(head, kNpyMagic, kNpyMagicBytes) == 0;
  if (t->has_header) {
    ReadNpyHeader(t);
    STOKER_CHECK(!dtype || *dtype == t->type, DataError,
                 "{} holds {} tokens (its .npy header says so), not the --dtype {}", path,
                 TokenTypeName(t->type), TokenTypeName(*dtype));
    return;
  }
  STOKER_CHECK(dtype.has_value(), ConfigError,
               "{} has no NumPy header (a raw token array, as OLMo writes them): give its --dtype",
               path);
  t->type = *dtype;
  STOKER_CHECK(t->file.size() % t->item() == 0, DataError,
               "{} is {} bytes, not a whole number of {} tokens: truncated, or another --dtype?",
               path, t->file.size(), TokenTypeName(t->type));
  t->tokens = t->file.size() / t->item();
}

class TokenFileInput : public ImportInput {
 public:
  TokenFileInput(std::vector<TokenFile> files, int64_t eos_id)
      : files_(std::move(files)), eos_id_(eos_id) {
    for (TokenFile& t : files_) {
      t.first_token = units_;
      t.first_byte = bytes_;
      units_ += t.tokens;
      bytes_ += t.tokens * t.item();
    }
  }
  TokenType type() const override { return files_.front().type; }
  uint64_t bytes() const override { return bytes_; }
  uint64_t units() const override { return units_; }
  const char* positions() const override { return "token positions"; }

  uint64_t UnitAt(uint64_t byte) override {
    for (const TokenFile& t : files_) {
      if (byte >= t.first_byte + t.tokens * t.item()) continue;
      const uint64_t local =
          byte > t.first_byte ? (byte - t.first_byte + t.item() - 1) / t.item() : 0;
      if (local == 0) return t.first_token;
      ChunkReader reader(t.file, t.data_end(), nullptr);
      const uint64_t eos = FindEos(t, &reader, local - 1);  // the token before may end a document
      t.file.Release();
      return t.first_token + std::min(eos + 1, t.tokens);
    }
    return units_;
  }

  void Import(uint64_t first, uint64_t last, ImportContext* context) override {
    for (size_t i = 0; i < files_.size(); ++i) {
      const TokenFile& t = files_[i];
      const uint64_t begin = std::max(first, t.first_token) - t.first_token;
      const uint64_t end = std::min(last, t.first_token + t.tokens);
      if (t.first_token + begin >= end) continue;
      const uint64_t limit = end - t.first_token;  // documents starting before it are this rank's
      ChunkReader reader(t.file, t.data_end(), context->on_read);
      for (uint64_t at = begin; at < limit;) {
        const uint64_t eos = FindEos(t, &reader, at);  // t.tokens when the file ends first
        context->FeedDocument(&reader, t.data_begin + at * t.item(), t.data_begin + eos * t.item(),
                              i, at, std::min(eos + 1, t.tokens), [&](uint64_t k) {
                                return fmt::format("{}: token {}", t.file.path(), at + k);
                              });
        if (eos < t.tokens) ++context->eos_removed;
        at = eos + 1;
      }
      t.file.Release();
    }
  }

  // The files whose last token is not the eos_id: their last document has no end.
  std::vector<std::string> Unterminated() const {
    std::vector<std::string> paths;
    for (const TokenFile& t : files_) {
      if (t.tokens == 0) continue;
      ChunkReader reader(t.file, t.data_end(), nullptr);
      if (FindEos(t, &reader, t.tokens - 1) == t.tokens) paths.push_back(t.file.path());
      t.file.Release();
    }
    return paths;
  }
  std::vector<std::string> Warnings() const override { return warnings_; }
  void Warn(std::string warning) { warnings_.push_back(std::move(warning)); }

  std::vector<SourceFile> Sources() const override {
    std::vector<SourceFile> sources;
    for (const TokenFile& t : files_) {
      sources.push_back({std::filesystem::absolute(t.file.path()).string(), t.file.size()});
    }
    return sources;
  }

 private:
  // The first token at or after `from` that is the eos_id, or t.tokens.
  uint64_t FindEos(const TokenFile& t, ChunkReader* reader, uint64_t from) const {
    const TokenChecker search(t.type, std::nullopt);
    for (uint64_t at = from; at < t.tokens;) {
      const auto piece = reader->Piece(t.data_begin + at * t.item(),
                                       std::min(t.tokens - at, kScanTokens) * t.item());
      const uint64_t n = piece.size() / t.item();
      const uint64_t hit = search.Find(piece, eos_id_);
      if (hit < n) return at + hit;
      at += n;
    }
    return t.tokens;
  }

  std::vector<TokenFile> files_;
  int64_t eos_id_;
  uint64_t units_ = 0, bytes_ = 0;
  std::vector<std::string> warnings_;
};

}  // namespace

std::unique_ptr<ImportInput> OpenTokenFileInput(const std::vector<std::string>& paths,
                                                std::optional<TokenType> dtype, int64_t eos_id,
                                                bool allow_unterminated) {
  std::vector<TokenFile> files;
  for (const std::string& path : paths) {
    files.emplace_back(path);
    OpenTokenFile(&files.back(), dtype);
    files.back().file.Release();
    CheckSameType(path, files.back().type, files.front().file.path(), files.front().type);
  }
  STOKER_CHECK(static_cast<uint64_t>(eos_id) <= LargestTokenId(files.front().type), ConfigError,
               "--eos-id {} cannot occur in {}: its tokens are {}, so no document would end",
               eos_id, files.front().file.path(), TokenTypeName(files.front().type));
  auto input = std::make_unique<TokenFileInput>(std::move(files), eos_id);
  const std::vector<std::string> unterminated = input->Unterminated();
  if (unterminated.empty()) return input;
  const std::string named =
      unterminated.size() <= 3
          ? fmt::format("{}", fmt::join(unterminated, ", "))
          : fmt::format("{} and {} more", fmt::join(unterminated.begin(), unterminated.begin() + 3,
                                                    ", "),
                        unterminated.size() - 3);
  const char* end = unterminated.size() == 1 ? "ends" : "end";
  STOKER_CHECK(allow_unterminated, DataError,
               "{} {} inside a document: no --eos-id {} after the last one (a file cut short, or "
               "written without a final --eos-id?); --allow-unterminated imports that document "
               "as it is",
               named, end, eos_id);
  input->Warn(fmt::format("{} {} without a final --eos-id {}: the last document imported as it "
                          "is (--allow-unterminated)",
                          named, end, eos_id));
  return input;
}

}  // namespace stoker
