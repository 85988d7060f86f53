#include "import/mds_input.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <nlohmann/json.hpp>

#include "base/check.h"
#include "import/hex_digest.h"
#include "import/mds_shard.h"
#include "tokens/token_type.h"

namespace stoker {

namespace {

std::optional<TokenType> NdarrayType(uint8_t code) {
  switch (code) {
    case 8:
      return TokenType::kUint8;
    case 9:
      return TokenType::kInt8;
    case 16:
      return TokenType::kUint16;
    case 17:
      return TokenType::kInt16;
    case 32:
      return TokenType::kUint32;
    case 33:
      return TokenType::kInt32;
    case 64:
      return TokenType::kUint64;
    case 65:
      return TokenType::kInt64;
    default:
      return std::nullopt;
  }
}

ColumnCoding ParseCoding(const std::string& text, std::optional<TokenType> bytes_dtype,
                         const std::string& where) {
  ColumnCoding coding{text};
  if (text == "bytes") {
    coding.type = bytes_dtype.value_or(TokenType::kInt64);
    return coding;
  }
  STOKER_CHECK(!bytes_dtype, ConfigError,
               "{} is encoded '{}', which says its own type: --dtype applies to bytes columns",
               where, text);
  STOKER_CHECK(text == "ndarray" || text.starts_with("ndarray:"), DataError,
               "{} is encoded '{}'; stoker imports ndarray:<integer type> and bytes columns", where,
               text);
  coding.shape_in_sample = std::count(text.begin(), text.end(), ':') < 2;
  if (text == "ndarray") return coding;
  const std::string name = text.substr(8, text.find(':', 8) - 8);
  coding.type = TokenTypeFromName(name);
  STOKER_CHECK(coding.type.has_value(), DataError,
               "{} is encoded '{}': {} values are not token ids", where, text, name);
  return coding;
}

template <typename T>
T Field(const nlohmann::json& object, const char* key, const std::string& where) {
  STOKER_CHECK(object.is_object() && object.contains(key), DataError, "{} has no \"{}\"", where,
               key);
  const nlohmann::json& value = object.at(key);
  if constexpr (std::is_same_v<T, uint64_t>) {
    STOKER_CHECK(value.is_number_unsigned(), DataError, "{}: \"{}\" is {}, not a count", where, key,
                 value.dump());
  }
  try {
    return value.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw DataError(fmt::format("{}: \"{}\" is {}, not what MDS writes there", where, key,
                                object.at(key).dump()));
  }
}

// The "hashes" of a raw_data or zip_data entry ({} when it has none).
MdsHashes Hashes(const nlohmann::json& file, const std::string& where) {
  MdsHashes hashes;
  if (!file.contains("hashes") || file.at("hashes").is_null()) return hashes;
  const auto listed = Field<nlohmann::json>(file, "hashes", where);
  STOKER_CHECK(listed.is_object(), DataError, "{}: \"hashes\" is {}, not {{kind: digest}}", where,
               listed.dump());
  for (const auto& [kind, digest] : listed.items()) {
    STOKER_CHECK(digest.is_string(), DataError, "{}: the {} hash is {}, not a hex digest", where,
                 kind, digest.dump());
    hashes.emplace(kind, digest.get<std::string>());
  }
  return hashes;
}

// The shards index.json lists in `folder`, checked against the files beside it.
std::vector<MdsShard> ReadIndex(const std::string& folder, const std::string& column,
                                std::optional<TokenType> bytes_dtype) {
  const std::string index_path = (std::filesystem::path(folder) / "index.json").string();
  const InputFile index_file(index_path);
  std::string text(index_file.size(), '\0');
  index_file.Read(0, text.size(), text.data(), "the index");
  index_file.Release();
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw DataError(fmt::format("{} is not JSON: {}", index_path, e.what()));
  }
  const auto version = Field<int64_t>(index, "version", index_path);
  STOKER_CHECK(version == 2, DataError, "{} has version {}; stoker reads MDS index version 2",
               index_path, version);
  std::vector<MdsShard> shards;
  for (const nlohmann::json& s : Field<nlohmann::json>(index, "shards", index_path)) {
    const std::string where = fmt::format("{}, shard {}", index_path, shards.size());
    MdsShard shard{where};
    const auto format = Field<std::string>(s, "format", where);
    STOKER_CHECK(format == "mds", DataError, "{} is of format '{}'; stoker imports MDS shards",
                 where, format);
    const auto names = Field<std::vector<std::string>>(s, "column_names", where);
    const auto codings = Field<std::vector<std::string>>(s, "column_encodings", where);
    for (const nlohmann::json& size : Field<nlohmann::json>(s, "column_sizes", where)) {
      STOKER_CHECK(size.is_null() || size.is_number_unsigned(), DataError,
                   "{}: a column size is {}, not a size or null", where, size.dump());
      shard.column_sizes.push_back(size.is_null() ? std::nullopt
                                                  : std::optional(size.get<uint64_t>()));
    }
    STOKER_CHECK(names.size() == codings.size() && names.size() == shard.column_sizes.size(),
                 DataError, "{}: column names, encodings and sizes differ in number", where);
    const auto found = std::find(names.begin(), names.end(), column);
    STOKER_CHECK(found != names.end(), ConfigError, "{} has no column '{}' (its columns: {})",
                 where, column, fmt::join(names, ", "));
    shard.column = static_cast<size_t>(found - names.begin());
    shard.coding = ParseCoding(codings[shard.column], bytes_dtype,
                               fmt::format("{}: column '{}'", where, column));
    const auto compression = s.value("compression", nlohmann::json());
    shard.zstd = !compression.is_null();
    STOKER_CHECK(
        compression.is_null() ||
            (compression.is_string() && compression.get<std::string>().starts_with("zstd")),
        DataError, "{} is compressed with {}; stoker reads zstd", where, compression.dump());
    const auto raw = Field<nlohmann::json>(s, "raw_data", where);
    shard.raw_bytes = Field<uint64_t>(raw, "bytes", where + ", raw_data");
    STOKER_CHECK(shard.raw_bytes < (uint64_t{1} << 32), DataError,
                 "{}: raw_data says {} bytes, beyond what an MDS shard's 32-bit offsets reach",
                 where, shard.raw_bytes);
    shard.samples = Field<uint64_t>(s, "samples", where);
    const auto stored = Field<nlohmann::json>(s, shard.zstd ? "zip_data" : "raw_data", where);
    shard.path =
        (std::filesystem::path(folder) / Field<std::string>(stored, "basename", where)).string();
    shard.stored_bytes = Field<uint64_t>(stored, "bytes", where);
    shard.stored_hashes = Hashes(stored, where + (shard.zstd ? ", zip_data" : ", raw_data"));
    if (shard.zstd) shard.raw_hashes = Hashes(raw, where + ", raw_data");
    shards.push_back(std::move(shard));
  }
  return shards;
}

// Reads little-endian integers of a shard's bytes, every read checked against its end.
class ShardBytes {
 public:
  ShardBytes(std::span<const std::byte> bytes, const std::string& path)
      : bytes_(bytes), path_(path) {}
  template <typename T>
  T Get(uint64_t at, std::string_view what) const {
    T value;
    std::memcpy(&value, Span(at, sizeof(T), what).data(), sizeof(T));
    return value;
  }
  std::span<const std::byte> Span(uint64_t at, uint64_t n, std::string_view what) const {
    STOKER_CHECK(at <= bytes_.size() && n <= bytes_.size() - at, DataError,
                 "{}: {} at byte {} runs past the end of the shard ({} bytes)", path_, what, at,
                 bytes_.size());
    return bytes_.subspan(at, n);
  }

 private:
  std::span<const std::byte> bytes_;
  const std::string& path_;
};

// The token bytes of `value` (one sample's column) and their type.
std::pair<std::span<const std::byte>, TokenType> Tokens(const MdsShard& shard,
                                                        std::span<const std::byte> value,
                                                        const std::string& where) {
  const ShardBytes in(value, shard.path);
  uint64_t at = 0;
  std::optional<TokenType> type = shard.coding.type;
  if (!type) {
    const auto code = in.Get<uint8_t>(at++, "the ndarray's type");
    type = NdarrayType(code);
    STOKER_CHECK(type.has_value(), DataError, "{}: ndarray type code {} is not an integer type",
                 where, code);
  }
  const auto size = static_cast<uint64_t>(TokenTypeSize(*type));
  if (shard.coding.shape_in_sample) {
    const auto head = in.Get<uint8_t>(at++, "the ndarray's shape");
    const uint64_t dims = head >> 2, dim_bytes = uint64_t{1} << (head & 3);
    uint64_t count = 1;
    for (uint64_t d = 0; d < dims; ++d, at += dim_bytes) {
      uint64_t dim = 0;
      std::memcpy(&dim, in.Span(at, dim_bytes, "the ndarray's shape").data(), dim_bytes);
      STOKER_CHECK(!__builtin_mul_overflow(count, dim, &count), DataError,
                   "{}: the ndarray's shape overflows", where);
    }
    STOKER_CHECK(value.size() - std::min<uint64_t>(at, value.size()) == count * size, DataError,
                 "{}: the ndarray's shape holds {} values, but {} bytes follow it", where, count,
                 value.size() - std::min<uint64_t>(at, value.size()));
  }
  STOKER_CHECK((value.size() - at) % size == 0, DataError,
               "{}: {} bytes are not a whole number of {} tokens", where, value.size() - at,
               TokenTypeName(*type));
  return {value.subspan(at), *type};
}

// The bytes of the token column within `sample`.
std::span<const std::byte> ColumnOf(const MdsShard& shard, std::span<const std::byte> sample,
                                    const std::string& where) {
  const uint64_t variable =
      std::count(shard.column_sizes.begin(), shard.column_sizes.end(), std::nullopt);
  const ShardBytes in(sample, shard.path);
  uint64_t at = 4 * variable, next_size = 0, column_at = 0, column_bytes = 0;
  for (size_t c = 0; c < shard.column_sizes.size(); ++c) {
    const uint64_t size = shard.column_sizes[c] ? *shard.column_sizes[c]
                                                : in.Get<uint32_t>(4 * next_size++, "a size");
    STOKER_CHECK(at <= sample.size() && size <= sample.size() - at, DataError,
                 "{}: column {} ({} bytes from byte {}) runs past the sample's {} bytes", where, c,
                 size, at, sample.size());
    if (c == shard.column) {
      column_at = at;
      column_bytes = size;
    }
    at += size;
  }
  STOKER_CHECK(at == sample.size(), DataError,
               "{}: its columns take {} bytes, but the sample is {} bytes", where, at,
               sample.size());
  return in.Span(column_at, column_bytes, "the column");
}

class MdsInput : public ImportInput {
 public:
  MdsInput(std::vector<MdsShard> shards, TokenType type) : shards_(std::move(shards)), type_(type) {
    for (MdsShard& s : shards_) {
      s.first_byte = bytes_;
      bytes_ += s.stored_bytes;
    }
  }
  TokenType type() const override { return type_; }
  uint64_t bytes() const override { return bytes_; }
  uint64_t units() const override { return shards_.size(); }
  const char* positions() const override { return "samples"; }

  uint64_t UnitAt(uint64_t byte) override {
    const auto it =
        std::lower_bound(shards_.begin(), shards_.end(), byte,
                         [](const MdsShard& s, uint64_t b) { return s.first_byte < b; });
    return static_cast<uint64_t>(it - shards_.begin());
  }

  void Import(uint64_t first, uint64_t last, ImportContext* context) override {
    for (uint64_t i = first; i < last; ++i) {
      const std::vector<std::byte> bytes = LoadShard(shards_[i]);
      if (context->on_read) context->on_read(shards_[i].stored_bytes);
      ImportShard(shards_[i], i, bytes, context);
    }
  }

  std::vector<std::string> Warnings() const override {
    std::set<std::string> kinds;
    const MdsShard* first = nullptr;  // the first that lists one, to name its index
    for (const MdsShard& s : shards_) {
      const std::set<std::string> unchecked = UncheckedHashKinds(s);
      if (first == nullptr && !unchecked.empty()) first = &s;
      kinds.insert(unchecked.begin(), unchecked.end());
    }
    if (kinds.empty()) return {};
    return {
        fmt::format("{} lists hashes of a kind stoker does not compute, not checked: {} "
                    "(stoker checks {})",
                    first->index, fmt::join(kinds, ", "), HexDigestKinds())};
  }

  std::vector<SourceFile> Sources() const override {
    std::vector<SourceFile> sources;
    for (const MdsShard& s : shards_) {
      sources.push_back({std::filesystem::absolute(s.path).string(), s.stored_bytes});
    }
    return sources;
  }

 private:
  void ImportShard(const MdsShard& shard, size_t input, std::span<const std::byte> bytes,
                   ImportContext* context) const {
    const ShardBytes in(bytes, shard.path);
    const auto count = in.Get<uint32_t>(0, "the sample count");
    STOKER_CHECK(count == shard.samples, DataError, "{} holds {} samples, but {} says {}",
                 shard.path, count, shard.index, shard.samples);
    uint64_t end = 4 + 4 * (uint64_t{count} + 1);  // where the samples may start
    for (uint64_t i = 0; i < count; ++i) {
      const auto begin = in.Get<uint32_t>(4 + 4 * i, "a sample offset");
      const auto next = in.Get<uint32_t>(8 + 4 * i, "a sample offset");
      // The writer's configuration (JSON) lies between the offsets and sample 0; samples follow
      // one another with no gap.
      STOKER_CHECK((i == 0 ? begin >= end : begin == end) && next >= begin, DataError,
                   "{}: sample {} spans bytes {} to {}, but the one before it ends at byte {}",
                   shard.path, i, begin, next, end);
      end = next;
      const std::string where = fmt::format("{}: sample {}", shard.path, i);
      const auto value = ColumnOf(shard, in.Span(begin, next - begin, "a sample"), where);
      const auto [tokens, type] = Tokens(shard, value, where);
      STOKER_CHECK(type == type_, DataError, "{} holds {} tokens, but the import's are {}", where,
                   TokenTypeName(type), TokenTypeName(type_));
      context->FeedDocument(tokens, input, i, i + 1,
                            [&](uint64_t k) { return fmt::format("{}, token {}", where, k); });
    }
    STOKER_CHECK(end == bytes.size(), DataError,
                 "{}: its samples end at byte {}, but it is {} bytes", shard.path, end,
                 bytes.size());
  }

  std::vector<MdsShard> shards_;
  TokenType type_;
  uint64_t bytes_ = 0;
};

// The type of the import: the column's, or for a plain `ndarray` column that of the first
// sample of the first shard that has one.
TokenType ImportType(const std::vector<MdsShard>& shards) {
  for (const MdsShard& shard : shards) {
    if (shard.coding.type) return *shard.coding.type;
    if (shard.samples == 0) continue;
    const std::vector<std::byte> bytes = LoadShard(shard);
    const ShardBytes in(bytes, shard.path);
    const auto begin = in.Get<uint32_t>(4, "a sample offset");
    const auto next = in.Get<uint32_t>(8, "a sample offset");
    STOKER_CHECK(next >= begin, DataError, "{}: sample 0 ends before it starts", shard.path);
    const std::string where = shard.path + ": sample 0";
    return Tokens(shard, ColumnOf(shard, in.Span(begin, next - begin, "a sample"), where), where)
        .second;
  }
  return TokenType::kInt64;
}

}  // namespace

std::unique_ptr<ImportInput> OpenMdsInput(const std::vector<std::string>& folders,
                                          const std::string& column,
                                          std::optional<TokenType> bytes_dtype) {
  std::vector<MdsShard> shards;
  for (const std::string& folder : folders) {
    STOKER_CHECK(std::filesystem::is_directory(folder), ConfigError,
                 "{} is not a folder (an MDS dataset is a folder with an index.json)", folder);
    for (MdsShard& s : ReadIndex(folder, column, bytes_dtype)) shards.push_back(std::move(s));
  }
  const TokenType type = ImportType(shards);
  for (const MdsShard& s : shards) {  // a shard of another fixed type fails now, not hours in
    if (s.coding.type) CheckSameType(s.index, *s.coding.type, shards.front().index, type);
  }
  return std::make_unique<MdsInput>(std::move(shards), type);
}

}  // namespace stoker
