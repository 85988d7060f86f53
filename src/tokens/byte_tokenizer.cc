#include "tokens/byte_tokenizer.h"

namespace stoker {

void EncodeBytes(std::string_view text, std::vector<uint64_t>* out) {
  out->reserve(out->size() + text.size());
  for (char c : text) out->push_back(static_cast<unsigned char>(c));
}

std::string DecodeBytes(const std::vector<uint64_t>& tokens) {
  std::string text;
  text.reserve(tokens.size());
  for (uint64_t t : tokens) {
    if (t < 256) text.push_back(static_cast<char>(t));
  }
  return text;
}

}  // namespace stoker
