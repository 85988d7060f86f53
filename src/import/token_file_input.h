// OLMo / Dolma token files as an ImportInput (import/import_input.h): arrays of token ids,
// documents ending at each eos_id, which is removed (and becomes the dataset's eos_id, so that
// the loader's framing gives back the same stream). Tokens after a file's last eos_id are its
// last document; two eos_id in a row are an empty document; a document never spans files.
//
// Despite their .npy name most such files are headerless memory-mapped arrays: their type is
// `dtype`, and their size must be a whole number of tokens. A file that starts with NumPy's
// magic "\x93NUMPY" is read as a real .npy file: its header gives the type (integers only, little
// endian) and shape (any, in C order), and the size must be what they imply. All files of one
// import must have one type; `dtype`, when given, must be theirs.
//
// The ranks split the files' token bytes; a rank's first document is the first to start in its
// part (it looks back one token for an eos_id), and it reads on past its part to end its last.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "import/import_input.h"

namespace stoker {

// Opens every file and reads its header, if any. Throws DataError or ConfigError naming the file;
// DataError naming the files whose last token is not `eos_id` unless `allow_unterminated` (then
// their last documents are imported as they are, and Warnings() names the files).
std::unique_ptr<ImportInput> OpenTokenFileInput(const std::vector<std::string>& files,
                                                std::optional<TokenType> dtype, int64_t eos_id,
                                                bool allow_unterminated);

}  // namespace stoker
