// A Batch as bytes, for the broadcast that hands a replica's batches to its members
// (loader/replica_feed.h): every field, so that the member's Batch equals the reader's.
#pragma once

#include <string>
#include <string_view>

#include "stoker/batch.h"

namespace stoker {

std::string EncodeBatch(const Batch& batch);
// The Batch EncodeBatch gave `bytes`; InternalError when they are not such a Batch.
Batch DecodeBatch(std::string_view bytes);

}  // namespace stoker
