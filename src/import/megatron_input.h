// Megatron-LM indexed datasets (PREFIX.idx + PREFIX.bin, as Megatron's tools/preprocess_data.py
// and IndexedDatasetBuilder write them) as an ImportInput (import/import_input.h).
//
// The .idx, little-endian: the 9-byte magic "MMIDIDX\0\0", u64 version 1, u8 dtype code
// (1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 8 uint16; 6 float64 and 7 float32 are not token
// files), u64 sequence count S, u64 document-index count D, int32[S] sequence lengths (tokens),
// int64[S] sequence byte pointers into the .bin, int64[D] document indices (the sequence where
// each document starts; 0 first, S last, equal neighbours an empty document) and, in multimodal
// files, int8[S] modes (ignored). A stoker document is a Megatron document: all its sequences,
// which are contiguous in the .bin.
//
// Everything is checked: the magic (fairseq's older TNTIDX index is named and refused), the
// version, the dtype, the .idx size against what the counts imply, every pointer against the
// lengths before it and the .bin's size, the document indices (from 0, never decreasing, to S)
// and every token (never negative). A rank reads the index of its own documents only, in
// blocks, and the .bin in large sequential reads.
//
// `end_id`: the id Megatron's --append-eod ends each document with. With `strip` (--eod-id) a
// document whose last token is it loses that token; without (--eos-id) documents stay whole and
// those that end in it are counted.
// Several prefixes are imported one after the other into one dataset; they must share a dtype.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "import/import_input.h"

namespace stoker {

// Opens and checks every prefix's header (a PREFIX.idx or PREFIX.bin given is taken as PREFIX).
// Throws DataError or ConfigError naming the file.
std::unique_ptr<ImportInput> OpenMegatronInput(const std::vector<std::string>& prefixes,
                                               std::optional<int64_t> end_id, bool strip);

}  // namespace stoker
