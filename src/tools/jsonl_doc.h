// One line of a `stoker pack` jsonl input as a document (tools/pack.h): the line must be one JSON
// object whose `spec.field` holds either a string (byte-tokenized, DocKind::kBytes) or an array of
// token ids (DocKind::kIds: integers in [0, 2^63 - 1], below spec.vocab_size when it is set).
// Pure: no I/O, no MPI; thread safe (plain function over values).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokens/token_type.h"  // kMaxTokenId
#include "tools/pack.h"
#include "tools/pack_sink.h"  // DocKind

namespace stoker {

// Replaces `tokens` with the document of `line`. Throws DataError naming `where` (e.g.
// "in.jsonl:3"), the field and, for a bad id, its index and value.
DocKind ParseJsonlDoc(std::string_view line, const PackSpec& spec, const std::string& where,
                      std::vector<uint64_t>* tokens);

}  // namespace stoker
