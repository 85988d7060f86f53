#include "tools/jsonl_doc.h"

#include <nlohmann/json.hpp>

#include "base/check.h"
#include "tokens/byte_tokenizer.h"

namespace stoker {

namespace {

uint64_t TokenId(const nlohmann::json& value, const PackSpec& spec, const std::string& where,
                 size_t index) {
  const auto bad = [&](const std::string& what) {
    return DataError(
        fmt::format("{}: \"{}\"[{}] = {} {}", where, spec.field, index, value.dump(), what));
  };
  if (!value.is_number_integer()) throw bad("is not an integer token id");
  if (!value.is_number_unsigned() && value.get<int64_t>() < 0) throw bad("is negative");
  const auto id = value.get<uint64_t>();
  if (id > kMaxTokenId) throw bad("exceeds the largest token id, 2^63 - 1");
  if (spec.vocab_size && id >= *spec.vocab_size) {
    throw bad(fmt::format("is not below --vocab-size {}", *spec.vocab_size));
  }
  return id;
}

}  // namespace

DocKind ParseJsonlDoc(std::string_view line, const PackSpec& spec, const std::string& where,
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

}  // namespace stoker
