// Fingerprinter: a 128-bit content hash (XXH3) over a sequence of typed fields, printed as 32 hex
// digits. The corpus fingerprint tells "the same corpus" from "another corpus" without reading
// any tokens; the example trainer checksums its model with it. Not cryptographic. Pure. Part of
// stoker::program's headers, implemented in src/tokens (the library's corpus fingerprint).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace stoker {

class Fingerprinter {
 public:
  Fingerprinter();
  ~Fingerprinter();
  Fingerprinter(const Fingerprinter&) = delete;
  Fingerprinter& operator=(const Fingerprinter&) = delete;

  void Add(uint64_t value);
  // Length-prefixed, so ("ab", "c") and ("a", "bc") differ.
  void Add(std::string_view text);
  std::string Hex() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace stoker
